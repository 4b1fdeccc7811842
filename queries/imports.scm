; Imports: absolute, aliased, relative, wildcard; anywhere (function-local and
; `if TYPE_CHECKING:` ones too: tracker.extract records the scope and conditions).
; Consumed by tracker.analysis.index to resolve names across modules.
; pass: full, definitions
(import_statement
  name: (dotted_name) @import.module)

(import_statement
  name: (aliased_import
    name: (dotted_name) @import.module
    alias: (identifier) @import.alias))

(import_from_statement
  module_name: (_) @import.from
  name: (dotted_name) @import.name)

(import_from_statement
  module_name: (_) @import.from
  name: (aliased_import
    name: (dotted_name) @import.name
    alias: (identifier) @import.alias))

(import_from_statement
  module_name: (_) @import.from
  (wildcard_import) @import.wildcard)
