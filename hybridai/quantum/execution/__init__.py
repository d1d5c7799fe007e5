"""Running tapes on any executor: ``run.execute`` (with zero-noise extrapolation around it), the check of a call's
gradient method and mitigation against the executor's capabilities (``config_check``), the check of what an
executor returned (``result_check``), the parameter-shift rule (``shift_rule``), exact seeded sampling
(``sampling``) and the memory check before a simulation allocates (``resources``); no executor is imported here."""
