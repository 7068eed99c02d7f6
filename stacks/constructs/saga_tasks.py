"""The order saga's six Lambda tasks (three steps, three compensations) and the DynamoDB tables they own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from stacks.compliance import acknowledge
from stacks.config import AppConfig
from stacks.constructs.defaults import log_group, removal_policy
from stacks.constructs.dependencies_layer import DependenciesLayer

LAMBDAS_DIR = Path(__file__).resolve().parents[2] / "lambdas"
# The newest Python runtime whose minor version the tests can run on too (pyproject's requires-python): the
# handlers are tested on the interpreter they run on in AWS. See docs/design.md, "Lambda packaging and runtime".
RUNTIME = lambda_.Runtime.PYTHON_3_13
METRICS_NAMESPACE = "FireAndForget"
SERVICE_NAME = "order-saga"


@dataclass(frozen=True)
class TaskSpec:
    """One saga task: its construct id, handler module and the tables it may touch."""

    construct_id: str
    module: str
    tables: tuple[str, ...]


TASKS = (
    TaskSpec("ReserveInventory", "reserve_inventory", ("Inventory", "Reservations", "Deliveries", "Orders")),
    TaskSpec("ChargePayment", "charge_payment", ("Payments",)),
    TaskSpec("ArrangeShipping", "arrange_shipping", ("Shipments", "Orders")),
    TaskSpec("CancelShipment", "cancel_shipment", ("Shipments", "Orders")),
    TaskSpec("RefundPayment", "refund_payment", ("Payments", "Orders")),
    TaskSpec("ReleaseInventory", "release_inventory", ("Inventory", "Reservations", "Orders")),
)

# Table construct id -> (partition key, TTL attribute or None).
TABLES: dict[str, tuple[str, str | None]] = {
    "Inventory": ("sku", None),
    "Reservations": ("orderId", None),
    "Payments": ("pk", None),
    "Shipments": ("orderId", None),
    "Deliveries": ("messageId", "expiresAt"),
    # The order ledger: which attempt owns each order's effects (docs/handlers.md, "Ownership across attempts").
    "Orders": ("orderId", None),
    "Idempotency": ("id", "expiration"),
}


class SagaTasks(Construct):
    """Tables (`.tables`) and functions (`.functions`, keyed by the state name that invokes them)."""

    def __init__(self, scope: Construct, construct_id: str, *, config: AppConfig, key: kms.IKey) -> None:
        super().__init__(scope, construct_id)
        # Orders carry addresses and payment tokens: encrypt at rest with the customer-managed key, so access
        # to the data also needs kms:Decrypt, which the grants below give each function for its tables only.
        self.tables = {name: self._table(name, pk, ttl, config, key) for name, (pk, ttl) in TABLES.items()}
        # Powertools, pydantic and boto3 at exactly uv.lock's versions, built for arm64 and RUNTIME's Python.
        layer = DependenciesLayer(self, "Dependencies", runtime=RUNTIME).layer
        code = lambda_.Code.from_asset(str(LAMBDAS_DIR), exclude=["**/__pycache__", "**/*.pyc"])
        self.functions = {spec.construct_id: self._function(spec, code, layer, config) for spec in TASKS}

    def _table(
        self, name: str, partition_key: str, ttl: str | None, config: AppConfig, key: kms.IKey
    ) -> dynamodb.Table:
        return dynamodb.Table(
            self,
            f"{name}Table",
            partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
            encryption_key=key,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=ttl,
            removal_policy=removal_policy(config),
        )

    def _function(
        self, spec: TaskSpec, code: lambda_.Code, layer: lambda_.ILayerVersion, config: AppConfig
    ) -> lambda_.Function:
        environment = {
            "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": config.log_level,
            "IDEMPOTENCY_TABLE_NAME": self.tables["Idempotency"].table_name,
            "IDEMPOTENCY_EXPIRY_SECONDS": str(config.idempotency_expiry_days * 24 * 3600),
        }
        if spec.construct_id == "ChargePayment":
            environment["DEFAULT_CREDIT_LIMIT"] = str(config.default_credit_limit)
        if spec.construct_id == "ArrangeShipping":
            environment["SERVED_COUNTRIES"] = ",".join(config.served_countries)
        for table in spec.tables:
            environment[f"{table.upper()}_TABLE_NAME"] = self.tables[table].table_name

        logs = log_group(self, f"{spec.construct_id}Logs", config=config)
        # Our own role instead of AWSLambdaBasicExecutionRole: write to this function's log group only.
        role = iam.Role(self, f"{spec.construct_id}Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        logs.grant_write(role)
        function = lambda_.Function(
            self,
            f"{spec.construct_id}Function",
            description=f"Order saga task {spec.construct_id}",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler=f"{spec.module}.handler.handler",
            code=code,
            layers=[layer],
            memory_size=256,
            timeout=Duration.seconds(config.lambda_timeout_seconds),
            tracing=lambda_.Tracing.ACTIVE,
            environment=environment,
            role=role,
            log_group=logs,
        )
        acknowledge(
            function, "Serverless-LambdaDLQ",
            "Step Functions invokes the tasks synchronously; a Lambda DLQ only catches asynchronous invocations. "
            "Failures are caught by the workflow and end in the failure DLQ.",
        )
        for rule in ("AwsSolutions-L1", "Serverless-LambdaLatestVersion"):
            acknowledge(
                function, rule,
                "python3.13 on purpose: the newest runtime whose Python the tests run on (these machines have no "
                "3.14), so the handlers and the layer's compiled wheels are tested on the runtime's minor version.",
            )
        # With the recommended flag createNewPoliciesWithAddToRolePolicy=false the tracing statement joins the
        # role's default policy, so the finding is on the role.
        acknowledge(
            role, "AwsSolutions-IAM5[Resource::*]",
            "Only xray:PutTraceSegments and xray:PutTelemetryRecords, which support no resource-level scoping.",
        )
        for action in ("kms:GenerateDataKey*", "kms:ReEncrypt*"):
            acknowledge(
                role, f"AwsSolutions-IAM5[Action::{action}]",
                "Added by the DynamoDB L2 grant for tables encrypted with the customer-managed key; "
                "the statement is scoped to that one key.",
            )
        for table in spec.tables:
            self.tables[table].grant_read_write_data(function)
        self.tables["Idempotency"].grant_read_write_data(function)
        return function
