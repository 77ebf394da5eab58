"""What a precision name that is not one meant: ``"bfloat16"`` means ``"bf16-mixed"`` or ``"bf16-true"``.

String distance alone guesses wrong here (``"bfloat16"`` is nearest to ``"fp8-float16"``, ``"fp16"`` to ``"bf16"``):
the words people write for a precision (a dtype's name, ``half``, ``amp``) name its *family*, and the family decides
the suggestion. The name is split into words (``"torch.bfloat16"``, ``"bf16_mixed"`` and ``"FP8-Mixed"`` included);
a word naming the family picks it, and ``true``/``pure`` or ``mixed``/``amp`` picks between its two forms.
"""

from __future__ import annotations

import re

#: The words that name each precision family, and the family's mixed and true (whole-model) precision names; fp8
#: has one name for both (the engine's layers in fp8, autocast in bf16 around them).
_FAMILIES: tuple[tuple[frozenset[str], str, str], ...] = (
    (frozenset({"fp8", "float8", "e4m3", "e5m2", "e4m3fn", "hybrid", "te", "transformer", "engine"}), "fp8", "fp8"),
    (frozenset({"bf16", "bfloat16", "bfloat", "brain"}), "bf16-mixed", "bf16-true"),
    (frozenset({"fp16", "float16", "f16", "half", "16"}), "16-mixed", "16-true"),
    (frozenset({"fp32", "float32", "f32", "float", "single", "full", "32"}), "32-true", "32-true"),
)
_TRUE_WORDS = frozenset({"true", "pure", "full"})
_MIXED_WORDS = frozenset({"mixed", "amp", "autocast", "mix"})


def _words(name: str) -> list[str]:
    return [word for word in re.split(r"[^a-z0-9]+", name.lower()) if word]


def precision_family_guess(name: str) -> tuple[str, ...]:
    """The precision names ``name`` most likely means, judged by the family its words name; ``()`` when none does.

    One name when the form is clear (``"fp16"`` -> ``("16-mixed",)``, ``"bf16_true"`` -> ``("bf16-true",)``,
    ``"fp8-mixed"`` -> ``("fp8",)``), both of the family's forms when it is not (``"bfloat16"`` ->
    ``("bf16-mixed", "bf16-true")``).
    """
    words = set(_words(name))
    if words & _FAMILIES[0][0] and words & _FAMILIES[2][0]:
        return ("fp8-float16",)  # fp8 with fp16 (not bf16) outside the engine's layers
    for family_words, mixed, true in _FAMILIES:
        if words & family_words:
            if mixed == true or words & _MIXED_WORDS:
                return (mixed,)
            if words & _TRUE_WORDS:
                return (true,)
            # A dtype alone (``bfloat16``) may mean either; fp16's usual meaning is mixed (Lightning's "16").
            return (mixed, true) if mixed.startswith("bf16") else (mixed,)
    return ()
