"""CDK entry point: read the config, build the two example stacks, run the compliance packs, synthesize.

No AWS calls."""

from __future__ import annotations

import sys

import aws_cdk as cdk

from fire_and_forget.construct import add_compliance_checks
from stacks.catalog.stack import CatalogStack
from stacks.config import DEFAULT_STACK_NAME, AppConfig, ConfigError
from stacks.names import catalog_stack_name
from stacks.orders.stack import OrderStack

STACK_NAME = DEFAULT_STACK_NAME  # the order example's stack name unless ff:stackName says otherwise
CATALOG_STACK_NAME = catalog_stack_name()  # the catalog example's: ff:stackName + "-Catalog"


def build_app(context: dict[str, object] | None = None, outdir: str | None = None) -> cdk.App:
    """The whole app; tests call it with cdk.json's context so the template equals `cdk synth`."""
    app = cdk.App(context=context, outdir=outdir) if context is not None else cdk.App(outdir=outdir)
    config = AppConfig.from_context(app.node.get_all_context())
    # Two examples of the same construct, each in its own stack: `cdk deploy <name>` deploys one of them.
    OrderStack(
        app,
        config.stack_name,  # ff:stackName: dev and prod can share an account and region
        config=config,
        description="Fire-and-Forget reference: SQS -> EventBridge Pipe -> Step Functions order saga, losing nothing",
    )
    CatalogStack(
        app,
        config.catalog_stack_name,
        settings=config,
        description="Fire-and-Forget reference: SQS -> EventBridge Pipe -> one-step search-index update, losing "
        "nothing",
    )
    add_compliance_checks(app)
    return app


def main() -> int:
    """Synthesize; a bad config prints one plain line per problem instead of a traceback."""
    try:
        app = build_app()
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
