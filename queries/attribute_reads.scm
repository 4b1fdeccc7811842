; Attribute reads `receiver.member` (except on bare `self`/`cls`, which say nothing about
; other objects) and constant-key subscripts `receiver["key"]`.
; Consumed by tracker.parse for Read facts: target members read as attributes,
; forward-output fields (`logits_output.hidden_states`), config keys (`eagle_config["..."]`).
((attribute
  object: (_) @read.receiver
  attribute: (identifier) @read.member) @read.site
  (#not-match? @read.receiver "^(self|cls)$"))

(subscript
  value: (_) @read.receiver
  subscript: (string (string_content) @read.key)) @read.key_site
