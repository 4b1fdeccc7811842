; The statements EAGLE3's aux-hidden-state contract follows inside model methods: attribute
; writes on any object (`self.model.layers_to_capture = ...`), tuple unpacking
; (`hidden_states, aux_hidden_states = hidden_states`), loops and locals bound to a
; subscript (`layer = self.layers[i]`), reads of capture state, and the calls that move it:
; `self.<x>(...)`, `super().forward(...)`, `.append`/`.extend`, `setattr`/`getattr`/`hasattr`,
; `__init__` chains, each algorithm's capture hook, and calls handing `self.<x>`, an aux
; list, capture state (`kwargs.get("captured_...")`) or `**kwargs` on to a helper or layer.
; Consumed by tracker.extract for Effect facts (model files are read for definitions only,
; so this narrow query is all of a forward pass the analysis sees); tracker.analysis.contract.
; pass: definitions
(assignment
  left: (attribute) @write.target
  right: (_) @write.value) @write.site

(assignment
  left: [(pattern_list) (tuple_pattern)] @unpack.targets
  right: (_) @unpack.value) @unpack.site

(for_statement
  left: (_) @loop.target
  right: (_) @loop.iter) @loop.site

(assignment
  left: (identifier) @local.name
  right: (subscript) @local.value) @local.site

((attribute
  attribute: (identifier) @read.member) @read.site
  (#match? @read.member "capture"))

((call
  function: (_) @call.function
  arguments: (argument_list) @call.arguments) @call.site
  (#match? @call.function "^self\\.[A-Za-z_][A-Za-z_0-9]*(\\.forward)?$|^super\\(\\)\\.forward$|\\.(append|extend|__init__|set_[a-z0-9]+_layers_to_capture)$|^(setattr|getattr|hasattr)$"))

((call
  function: (_) @call.function
  arguments: (argument_list) @call.arguments) @call.site
  (#match? @call.arguments "aux|capture|\\*\\*|self\\.[A-Za-z_]*model\\b"))
