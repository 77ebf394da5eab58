"""Lightning's own words first: where lightning-hpu refuses an argument that Lightning refuses too, the error says
Lightning's message, then the HPU sentence.

People, and libraries' test suites (``pytest.raises(ValueError, match="Precision 'bogus' is invalid")``), search for
Lightning's wording; lightning-hpu is installed in every Lightning program of the environment, so where it checks an
argument before Lightning does its error must still carry Lightning's text. That text is asked of Lightning itself
(the check Lightning would run, :func:`lightning_refusal`), not copied, so it follows Lightning's releases.
"""

from __future__ import annotations

from collections.abc import Callable


def lightning_refusal(check: Callable[[], object], *errors: type[BaseException]) -> str:
    """The message of the error (one of ``errors``) that Lightning's ``check`` raises, as the start of a longer one
    (a full stop and a space after it); ``""`` when Lightning accepts.

    ``check`` must be a check of Lightning that changes nothing (or only what its caller is about to change anyway).
    """
    try:
        check()
    except errors as error:
        return lightning_sentence(str(error))
    return ""


def lightning_sentence(message: str) -> str:
    """``message`` (Lightning's) on one line, ending in a full stop and a space: ours follows it."""
    text = " ".join(message.split())
    return f"{text} " if text.endswith((".", "!", "?")) else f"{text}. "
