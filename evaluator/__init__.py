"""pkb-arena's judge: framework-free (standard library + torch), runs on a bare GPU host and in CPU gloo worlds."""
