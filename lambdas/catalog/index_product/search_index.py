"""The search-index table: a conditional write that never lowers a product's version, and the read that explains it."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from botocore.exceptions import ClientError

from fire_and_forget.runtime.errors import aws_errors_as_transient, error_code

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

    from index_product.model import ProductDocument

# A later message may arrive first (SQS standard queues do not keep order): a version only ever replaces a lower one.
NEWER_ONLY = "attribute_not_exists(productId) OR version < :version"


class IndexedVersion(NamedTuple):
    """Which version of a product the index holds, and which SQS message wrote it."""

    version: int
    message_id: str


class DynamoDBSearchIndex:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._client = client
        self._table = table

    def write_if_newer(self, document: ProductDocument, terms: list[str], message_id: str, indexed_at: int) -> bool:
        """Write the document; False when the index already holds this version or a newer one."""
        item: dict[str, AttributeValueTypeDef] = {
            "productId": {"S": document.productId},
            "version": {"N": str(document.version)},
            "title": {"S": document.title},
            "description": {"S": document.description},
            # A list, not a string set: a set may not be empty and would drop the caller's order.
            "tags": {"L": [{"S": tag} for tag in document.tags]},
            "messageId": {"S": message_id},
            "indexedAt": {"N": str(indexed_at)},
        }
        if terms:  # DynamoDB refuses an empty set; a title of punctuation only has no words to find it by
            item["terms"] = {"SS": terms}
        try:
            with aws_errors_as_transient(f"indexing product {document.productId}"):
                self._client.put_item(
                    TableName=self._table,
                    Item=item,
                    ConditionExpression=NEWER_ONLY,
                    ExpressionAttributeValues={":version": {"N": str(document.version)}},
                )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def indexed(self, product_id: str) -> IndexedVersion | None:
        """The version the index holds now (strongly consistent: it explains a write that just failed its condition)."""
        with aws_errors_as_transient(f"reading product {product_id} from the index"):
            response = self._client.get_item(
                TableName=self._table,
                Key={"productId": {"S": product_id}},
                ConsistentRead=True,
                ProjectionExpression="version, messageId",
            )
        item = response.get("Item")
        if item is None:
            return None
        return IndexedVersion(version=int(item["version"]["N"]), message_id=item["messageId"]["S"])
