"""What helps a user where things go wrong: the environment report, the tested versions, user errors as one
sentence (after Lightning's own message where Lightning refuses too), did-you-mean hints, and the module paths of
lightning-habana and of lightning-hpu 0.1.0.

Imports (the layering test checks this paragraph): no Lightning package (Lightning-free, with all it imports); of
this package, ``runtime``.
"""
