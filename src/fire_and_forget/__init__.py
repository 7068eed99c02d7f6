"""The Fire-and-Forget pattern on AWS: SQS, an EventBridge Pipe in FIRE_AND_FORGET mode, a Standard workflow, and
every failure recovered, recorded, announced once and healed where no person is needed.

The parts, each importable on its own (docs/construct.md, docs/operator-cli.md):
- fire_and_forget.runtime: the contract every part shares (failure records, the healing policy, the redrive, the
  delivery claim, transient errors, the failure tail's states, the stack's outputs); the standard library and
  botocore only, and shipped into every Lambda asset;
- fire_and_forget.healing: the Reconciler and the Redriver, the pipeline's own Lambda functions;
- fire_and_forget.construct: the CDK construct (extra `construct`);
- fire_and_forget.cli: the operator CLI, `ff-ops` (extra `cli`);
- fire_and_forget.rehearsal: the offline rehearsal on moto (extra `rehearsal`).

This module imports nothing: it is shipped into Lambda assets with the runtime.
"""

__version__ = "0.2.0"
