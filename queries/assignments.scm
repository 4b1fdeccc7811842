; Assignments: `self.x = Ctor(...)`, class attributes, module names, `EntryClass = [...]`,
; local aliases (`target_model = self.target_worker.model_runner.model`).
; Consumed by tracker.extract for Assign facts: provision (instance attributes, inner models),
; entry-class registries, alias tracking and flag discovery.
; pass: full
(assignment
  left: (_) @assign.target
  right: (_) @assign.value) @assign.site

(augmented_assignment
  left: (_) @assign.target
  right: (_) @assign.value) @assign.site
