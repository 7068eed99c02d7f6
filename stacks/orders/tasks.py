"""The order saga's Lambda tasks (three steps, three compensations, and BookCarrier when the carrier confirms
bookings), the DynamoDB tables they own, and what they count."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from fire_and_forget.construct import (
    RUNTIME,
    DependenciesLayer,
    WorkflowMetrics,
    acknowledge,
    encrypted_table,
    handler_code,
    task_function,
)
from stacks.config import AppConfig

HANDLERS_DIR = Path(__file__).resolve().parents[2] / "lambdas" / "orders"
METRICS_NAMESPACE = "FireAndForget"
SERVICE_NAME = "order-saga"
# What the handlers count (lambdas/orders, `count(...)`), for the pipeline's dashboard and error alarms. The errors
# each function raises on purpose, so that the workflow can Catch them by name, are counted by exactly one handler
# right before it raises; Lambda counts them in Errors like any crash.
ORDER_METRICS = WorkflowMetrics(
    namespace=METRICS_NAMESPACE,
    service=SERVICE_NAME,
    outcomes=("OrdersReserved", "OrdersCharged", "CarrierRequests", "OrdersShipped"),
    rejections=("InvalidOrders", "OutOfStock", "PaymentsDeclined", "ShippingUnavailable", "DuplicateDeliveries",
                "DuplicateOrders", "OrderConflicts"),
    compensations=("ShipmentsCancelled", "InventoryReleased", "PaymentsRefunded", "OrphanChargesRefunded"),
    manual_repair="CompensationsFailed",
    expected_errors={
        "ReserveInventory": ("DuplicateDeliveries", "DuplicateOrders", "InvalidOrders", "OrderConflicts",
                             "OutOfStock"),
        "ChargePayment": ("PaymentsDeclined",),
        "ArrangeShipping": ("ShippingUnavailable",),
        "BookCarrier": ("ShippingUnavailable",),  # with ff:carrierConfirmation, the first to learn it
    },
)


@dataclass(frozen=True)
class TaskSpec:
    """One saga task: its construct id, handler module and the tables it may touch."""

    construct_id: str
    module: str
    tables: tuple[str, ...]
    idempotent: bool = True  # runs its work once per attempt through Powertools idempotency (the Idempotency table)


TASKS = (
    # ReserveInventory also claims each SQS message: the pipeline grants it its deliveries table.
    TaskSpec("ReserveInventory", "reserve_inventory", ("Inventory", "Reservations", "Orders")),
    # ChargePayment reads the ledger before refunding a charge another attempt left behind.
    TaskSpec("ChargePayment", "charge_payment", ("Payments", "Orders")),
    TaskSpec("ArrangeShipping", "arrange_shipping", ("Shipments", "Orders")),
    TaskSpec("CancelShipment", "cancel_shipment", ("Shipments", "Orders")),
    TaskSpec("RefundPayment", "refund_payment", ("Payments", "Orders")),
    TaskSpec("ReleaseInventory", "release_inventory", ("Inventory", "Reservations", "Orders")),
)
# With ff:carrierConfirmation: hands the shipment to the carrier and keeps the task token (in the callback entry
# point's waits table, granted by the stack).
BOOK_CARRIER = TaskSpec("BookCarrier", "book_carrier", (), idempotent=False)

# Table construct id -> (partition key, TTL attribute or None).
TABLES: dict[str, tuple[str, str | None]] = {
    "Inventory": ("sku", None),
    "Reservations": ("orderId", None),
    "Payments": ("pk", None),
    "Shipments": ("orderId", None),
    # The order ledger: which attempt owns each order's effects (docs/handlers.md, "Ownership across attempts").
    "Orders": ("orderId", None),
    "Idempotency": ("id", "expiration"),
}


class SagaTasks(Construct):
    """Tables (`.tables`) and functions (`.functions`, keyed by the state name that invokes them)."""

    def __init__(self, scope: Construct, construct_id: str, *, config: AppConfig, key: kms.IKey,
                 carrier_timeout_seconds: int) -> None:
        super().__init__(scope, construct_id)
        # Orders carry addresses and payment tokens: encrypt at rest with the customer-managed key, so access
        # to the data also needs kms:Decrypt, which the grants below give each function for its tables only.
        self.tables = {
            name: encrypted_table(self, f"{name}Table", partition_key=pk, ttl_attribute=ttl, key=key, settings=config)
            for name, (pk, ttl) in TABLES.items()
        }
        # Powertools, pydantic and boto3 at exactly uv.lock's versions, built for arm64 and RUNTIME's Python.
        layer = DependenciesLayer(self, "Dependencies", runtime=RUNTIME).layer
        self.layer = layer  # the pipeline's own functions use it too
        code = handler_code(HANDLERS_DIR)
        self.functions = {spec.construct_id: self._function(spec, code, layer, config) for spec in TASKS}
        self.carrier_requests: sqs.Queue | None = None
        if config.carrier_confirmation:
            self.carrier_requests = self._carrier_requests(key)
            book = self._function(BOOK_CARRIER, code, layer, config)
            book.add_environment("CARRIER_REQUESTS_QUEUE_URL", self.carrier_requests.queue_url)
            book.add_environment("CARRIER_TIMEOUT_SECONDS", str(carrier_timeout_seconds))
            self.carrier_requests.grant_send_messages(book)
            self.functions = {**self.functions, BOOK_CARRIER.construct_id: book}

    def _carrier_requests(self, key: kms.IKey) -> sqs.Queue:
        """Where BookCarrier hands shipments to the carrier, which reads them (the stack grants its answerer)."""
        queue = sqs.Queue(self, "CarrierRequests", encryption=sqs.QueueEncryption.KMS, encryption_master_key=key,
                          enforce_ssl=True)
        for rule in ("AwsSolutions-SQS3", "Serverless-SQSRedrivePolicy"):
            acknowledge(queue, rule,
                        "The carrier's inbox, read by the carrier: a request it cannot take is answered as a failure "
                        "through the callback entry point, and one nobody takes ends in BookCarrier's timeout, which "
                        "compensates the order and records it in the failure DLQ. No request waits on this queue "
                        "alone, so a DLQ behind it would hold nothing the failure DLQ does not.")
        return queue

    def _function(
        self, spec: TaskSpec, code: lambda_.Code, layer: lambda_.ILayerVersion, config: AppConfig
    ) -> lambda_.Function:
        environment = {"POWERTOOLS_SERVICE_NAME": SERVICE_NAME, "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE}
        if spec.idempotent:
            environment["IDEMPOTENCY_TABLE_NAME"] = self.tables["Idempotency"].table_name
            environment["IDEMPOTENCY_EXPIRY_SECONDS"] = str(config.idempotency_expiry_seconds)
        if spec.construct_id == "ChargePayment":
            environment["DEFAULT_CREDIT_LIMIT"] = str(config.default_credit_limit)
        if spec.construct_id in ("ArrangeShipping", "BookCarrier"):
            environment["SERVED_COUNTRIES"] = ",".join(config.served_countries)
        for table in spec.tables:
            environment[f"{table.upper()}_TABLE_NAME"] = self.tables[table].table_name
        function = task_function(
            self, spec.construct_id, handler=f"{spec.module}.handler.handler", code=code, layer=layer,
            settings=config, environment=environment, description=f"Order saga task {spec.construct_id}",
        )
        for table in spec.tables:
            self.tables[table].grant_read_write_data(function)
        if spec.idempotent:
            self.tables["Idempotency"].grant_read_write_data(function)
        return function
