; Everything that makes code run only sometimes: if/elif/else, `and`/`or` short-circuits,
; conditional expressions, `try:` with its handlers, and `assert`.
; Consumed by tracker.parse to give every site its enclosing conditions and guards.
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
