; The assignments that define something a class or module provides: `self.x = ...`
; anywhere in a method, class attributes, and module-level names (`EntryClass = [...]`).
; Consumed by tracker.extract for definition-only facts (model files), in place of
; assignments.scm, which also captures every local variable of every forward pass.
; pass: definitions
(assignment
  left: (attribute
    object: (identifier) @assign.owner
    attribute: (identifier)) @assign.target
  right: (_) @assign.value
  (#eq? @assign.owner "self")) @assign.site

(module
  (expression_statement
    (assignment
      left: (_) @assign.target
      right: (_) @assign.value) @assign.site))

(class_definition
  body: (block
    (expression_statement
      (assignment
        left: (_) @assign.target
        right: (_) @assign.value) @assign.site)))
