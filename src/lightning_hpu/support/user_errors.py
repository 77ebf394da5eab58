"""A script's user errors as one line: no HPU, no stand-in, too few devices, an argument HPU cannot take.

Scripts end with ``run_script(main)`` instead of ``main()``: the errors the package raises for a mistake it
recognised (:data:`USER_ERRORS`) exit with ``error: <the sentence>`` and status 1, without a traceback; anything
else (a bug) keeps its traceback.
"""

from __future__ import annotations

from collections.abc import Callable

from lightning_hpu.runtime import HPUConfigurationError, HPUFeatureUnavailableError, HPUNotAvailableError
from lightning_hpu.runtime.base import UserErrorRecord

#: The package's errors for a user's mistake or machine: each message says what to change.
USER_ERRORS: tuple[type[Exception], ...] = (HPUNotAvailableError, HPUFeatureUnavailableError, HPUConfigurationError)


def run_script(main: Callable[[], object]) -> None:
    """Call ``main()``; a :data:`USER_ERRORS` error ends the process with its one sentence (status 1).

    So does another library's error that repeats such a sentence (LightningCLI's parser wraps the errors of the
    classes it builds in its own); every other error keeps its traceback.
    """
    try:
        main()
    except USER_ERRORS as error:
        raise SystemExit(f"error: {error}") from None
    except Exception as error:
        sentence = UserErrorRecord.latest_message
        if sentence and sentence in str(error):
            raise SystemExit(f"error: {sentence}") from None
        raise
