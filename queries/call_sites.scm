; Calls: `receiver.member(...)` with the receiver's full text, and plain `member(...)`.
; Consumed by tracker.extract for Call facts: the interface matches receivers against the
; role rules; hasattr/getattr guards and worker construction are calls too.
; pass: full
(call
  function: (attribute
    object: (_) @call.receiver
    attribute: (identifier) @call.member)
  arguments: (_) @call.arguments) @call.site

(call
  function: (identifier) @call.member
  arguments: (_) @call.arguments) @call.site
