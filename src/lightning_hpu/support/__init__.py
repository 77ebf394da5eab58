"""What helps a user where things go wrong: the environment report, the tested versions, user errors as one
sentence, did-you-mean hints, and lightning-habana's module paths."""
