; Everything that makes code run only sometimes: if/elif/else, `and`/`or` short-circuits,
; conditional expressions, `try:` with its handlers, and `assert`.
; Consumed by tracker.extract to give every site its enclosing conditions and guards.
; pass: full
(if_statement
  condition: (_) @if.condition
  consequence: (block) @if.consequence) @if.statement

(boolean_operator
  left: (_) @boolean.left
  right: (_) @boolean.right) @boolean.expression

(conditional_expression) @ternary.expression

(try_statement
  body: (block) @try.body
  (except_clause) @try.handler)

(assert_statement
  .
  (_) @assert.test)

; Error messages: what a `raise` raises and the message of an `assert`, evaluated only on
; the way to the failure. A member read only there describes a failure; it is not a
; requirement. (The arguments of a logging call are not: Python evaluates them whenever the
; call runs, whatever the level, so a read there crashes as any other read.)
(raise_statement) @message.raised

(assert_statement
  .
  (_)
  .
  (_) @message.asserted)
