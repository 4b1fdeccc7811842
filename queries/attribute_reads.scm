; Attribute reads `receiver.member` (except on bare `self`/`cls`, which say nothing about
; other objects) and constant-key subscripts `receiver["key"]`.
; Consumed by tracker.extract for Read facts: target members read as attributes,
; forward-output fields (`logits_output.hidden_states`), config keys (`eagle_config["..."]`).
; pass: full
((attribute
  object: (_) @read.receiver
  attribute: (identifier) @read.member) @read.site
  (#not-match? @read.receiver "^(self|cls)$"))

; A constant key is a plain string literal: no f-string (its quote is `f"`), nothing but
; the text between the quotes.
(subscript
  value: (_) @read.receiver
  .
  subscript: (string
    .
    (string_start) @read.quote
    .
    (string_content) @read.key
    .
    (string_end)
    .)
  (#match? @read.quote "^['\"]$")) @read.key_site
