; `__getattr__` methods, with the parameter that receives the attribute name and the body.
; Consumed by tracker.extract for Forward facts: a wrapper whose `__getattr__` returns
; `getattr(self.inner, name)` provides what every possible class of `self.inner` provides.
; pass: full, definitions
(function_definition
  name: (identifier) @forward.method
  parameters: (parameters . (_) . (_) @forward.param)
  body: (block) @forward.body
  (#eq? @forward.method "__getattr__")) @forward.definition
