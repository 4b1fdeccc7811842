; Return values. Consumed by tracker.extract for Return facts: the bodies of the
; `SpeculativeAlgorithm.is_*()` predicates and the classes a worker factory returns.
; pass: full, definitions
(return_statement
  (_) @return.value) @return.site
