; Classes, functions and methods with their decorators.
; Consumed by tracker.extract to build ClassDef/FunctionDef facts and the scope of every site
; (the index resolves bases and methods from them; provision reads method names).
; pass: full, definitions
(class_definition
  name: (identifier) @class.name
  superclasses: (argument_list)? @class.bases) @class.definition

(function_definition
  name: (identifier) @function.name
  parameters: (parameters) @function.parameters) @function.definition

(decorated_definition
  (decorator) @definition.decorator)
