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

; Error messages: what a `raise` raises, the message of an `assert`, and the arguments of
; a logging call (`logger.warning(...)`, `logging.info(...)`, `warnings.warn(...)`). A
; member read only there describes a failure; it is not a requirement.
(raise_statement) @message.raised

(assert_statement
  .
  (_)
  .
  (_) @message.asserted)

(call
  function: (attribute
    object: [(identifier) (attribute)] @message.logger
    attribute: (identifier) @message.level)
  arguments: (argument_list) @message.logged
  (#match? @message.logger "^(self\\.)?(logger|logging|log|warnings)$")
  (#match? @message.level "^(debug|info|warning|warn|error|exception|critical|fatal)$"))
