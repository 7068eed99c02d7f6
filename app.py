"""CDK entry point: read the config, build the stack, run the compliance packs, synthesize. No AWS calls."""

from __future__ import annotations

import aws_cdk as cdk

from stacks.compliance import add_compliance_checks
from stacks.config import AppConfig
from stacks.fire_and_forget_stack import FireAndForgetStack

STACK_NAME = "FireAndForget"


def build_app(context: dict[str, object] | None = None, outdir: str | None = None) -> cdk.App:
    """The whole app; tests call it with cdk.json's context so the template equals `cdk synth`."""
    app = cdk.App(context=context, outdir=outdir) if context is not None else cdk.App(outdir=outdir)
    config = AppConfig.from_context(app.node.get_all_context())
    FireAndForgetStack(
        app,
        STACK_NAME,
        config=config,
        description="Fire-and-Forget reference: SQS -> EventBridge Pipe -> Step Functions order saga, losing nothing",
    )
    add_compliance_checks(app)
    return app


if __name__ == "__main__":
    build_app().synth()
