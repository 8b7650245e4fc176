"""Rule packs: one folder per pack, rules as data files (installed as `trnprof.rules`)."""
