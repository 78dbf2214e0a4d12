"""``/v1/documents`` (insert, upload, list, delete, status) and ``/v1/operations``.

Writes are queued to the background writer and answered ``202`` with an operation id. Nothing
in a request names a file on the server: documents come only from the request body (an
uploaded file's name is reduced to its last component and used only as its ``doc_id``), and
ids in paths are only looked up in tables.
"""

import asyncio
import json
from pathlib import PurePosixPath
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ValidationError

from graphstrata.bindings.api import (
    Document,
    DocumentError,
    IngestConfig,
    as_documents,
    validate_batch,
)
from graphstrata.bindings.files import FORMATS, FileBatch, read_files
from graphstrata.bindings.server.auth import Guard
from graphstrata.bindings.server.errors import ApiError, error_responses, one_line
from graphstrata.bindings.server.jsonbody import JSONRoute, parse_json
from graphstrata.bindings.server.models import Models
from graphstrata.bindings.server.runtime import Service

NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/x-jsonlines")


def parse_documents(body: bytes, content_type: str) -> list[Any]:
    """The raw documents of a request body: a JSON list, or JSONL (one document per line).

    Parameters
    ----------
    body:
        The request body.
    content_type:
        Its ``Content-Type`` (``application/json`` or one of :data:`NDJSON_TYPES`).

    Returns
    -------
    list
        The decoded items (validated by :func:`validated_documents`).

    Raises
    ------
    ApiError
        422 for a body that is not UTF-8 or not valid JSON (at any nesting depth:
        :func:`~graphstrata.bindings.server.jsonbody.parse_json`), 415 for another content
        type.
    """
    media = content_type.split(";", 1)[0].strip().lower()
    if media not in (*NDJSON_TYPES, "application/json", ""):
        raise ApiError(
            415,
            "bad_request",
            f"unsupported content type {media[:100]!r}; "
            "send application/json or application/x-ndjson",
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(422, "bad_request", "body is not UTF-8") from exc
    if media in NDJSON_TYPES:
        # Only "\n" ends a line: str.splitlines would also split at U+2028 and other
        # characters that JSON strings may hold.
        return [
            parse_json(line, f"line {lineno}")
            for lineno, line in enumerate(text.split("\n"), start=1)
            if line.strip()
        ]
    data = parse_json(text)
    if not isinstance(data, list):
        raise ApiError(422, "bad_request", "expected a JSON list of documents")
    return data


#: Bad documents after which :func:`check_members` stops checking.
MAX_BAD_DOCUMENTS = 10


def check_members(raw: list[Any], model: type[BaseModel]) -> None:
    """Check each raw document against ``model`` (strict types, no unknown members).

    Parameters
    ----------
    raw:
        The decoded items of the request.
    model:
        The app's ``DocumentIn``.

    Raises
    ------
    DocumentError
        Listing the problems of the first :data:`MAX_BAD_DOCUMENTS` bad documents, each
        naming the document by position (and id, when it has one): ``document #2 ('a.md'):
        metadata: Input should be a valid dictionary``. The check stops there: a body of
        millions of bad items is refused after a few, not after validating them all (issue
        51: an 8 MiB list of zeros took 21 s and 450 MB to refuse when every item was checked).
    """
    allowed = ", ".join(model.model_fields)
    problems: list[str] = []
    bad = 0
    for i, item in enumerate(raw):
        if bad >= MAX_BAD_DOCUMENTS:
            problems.append(f"documents #{i} to #{len(raw) - 1} were not checked")
            break
        try:
            model.model_validate(item)
        except ValidationError as exc:
            bad += 1
            doc_id = item.get("doc_id") if isinstance(item, dict) else None
            label = f"document #{i}" + (f" ({doc_id[:100]!r})" if isinstance(doc_id, str) else "")
            for err in exc.errors(include_url=False)[:10]:
                loc = ".".join(str(p) for p in err["loc"])
                if not loc:
                    problems.append(f"{label}: expected an object with doc_id and text")
                    continue
                hint = f" (allowed: {allowed})" if err["type"] == "extra_forbidden" else ""
                problems.append(one_line(f"{label}: {loc[:100]}: {err['msg']}{hint}"))
    if problems:
        raise DocumentError(problems)


def validated_documents(
    raw: list[Any], ingest: IngestConfig, model: type[BaseModel] | None = None
) -> list[Document]:
    """Documents checked as the engine checks them before a write.

    Parameters
    ----------
    raw:
        The decoded items of the request.
    ingest:
        The index's ingest limits.
    model:
        The app's ``DocumentIn``, checked first (:func:`check_members`) when given.

    Returns
    -------
    list of Document
        The valid documents, in order.

    Raises
    ------
    ApiError
        422 for an empty list.
    DocumentError
        For invalid documents (answered 422 with the ``problems``).
    """
    if not raw:
        raise ApiError(422, "bad_request", "no documents in the request")
    if model is not None:
        check_members(raw, model)
    docs = as_documents(raw)
    validate_batch(docs, ingest)
    return docs


def document_status(service: Service, doc_id: str) -> dict[str, Any] | None:
    """Whether ``doc_id`` is committed, pending, or unknown (None).

    Parameters
    ----------
    service:
        The app's service.
    doc_id:
        The document id (looked up in the served version and the writer's queue).

    Returns
    -------
    dict or None
        The ``DocumentStatus`` body, or None when the document is neither present nor pending.
    """
    pinned = service.index.pinned()
    out: dict[str, Any] = {"doc_id": doc_id, "present": False, "index_version": pinned.version}
    found = pinned.document(doc_id)
    if found is not None:
        out.update(present=True, **found)
    pending = [op.id for op in service.writer.pending_for(doc_id)]
    if not out["present"] and not pending:
        return None
    out["pending_operations"] = pending
    out["status"] = "pending" if pending else "committed"
    return out


def only_params(request: Request, *allowed: str) -> None:
    """Refuse a query parameter the route does not take, as unknown body members are
    refused (422 naming the allowed ones)."""
    unknown = sorted(set(request.query_params) - set(allowed))
    if unknown:
        raise ApiError(
            422,
            "bad_request",
            one_line(
                f"unknown query parameter {unknown[0][:100]!r} (allowed: {', '.join(allowed)})"
            ),
        )


def upload_name(filename: str | None) -> str:
    """An uploaded file's ``doc_id``: the last component of its name (``a/../b.pdf`` and
    ``C:\\x\\b.pdf`` give ``b.pdf``), "" when it has none."""
    name = PurePosixPath((filename or "").replace("\\", "/")).name
    return "" if name in (".", "..") else name


async def parsed_upload(request: Request, ingest: IngestConfig) -> FileBatch:
    """The files of a ``multipart/form-data`` upload, parsed one by one.

    Parameters
    ----------
    request:
        The request: repeated ``files`` parts, an optional ``metadata`` part (a JSON object
        given to every document).
    ingest:
        The index's document limits.

    Raises
    ------
    ApiError
        415 for another content type; 422 for a body that is not valid multipart, no
        ``files`` part, metadata that is not a JSON object, or when no file gives a
        document (each file's cause listed).
    """
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "multipart/form-data":
        raise ApiError(415, "bad_request", "send multipart/form-data with repeated 'files' parts")
    try:
        form = await request.form(max_files=1000, max_fields=100)
    except Exception as exc:  # starlette's MultiPartException and the parser's errors
        raise ApiError(422, "bad_request", one_line(f"not a valid multipart body: {exc}")) from exc
    parts = [p for p in form.getlist("files") if not isinstance(p, str)]
    if not parts:
        raise ApiError(422, "bad_request", "no file in the request: repeat the 'files' part")
    metadata: Any = None
    raw = form.get("metadata")
    text = (
        ""
        if raw is None
        else raw
        if isinstance(raw, str)
        else (await raw.read()).decode("utf-8", "replace")
    )
    if text.strip():  # an empty part is no metadata
        metadata = parse_json(text, "metadata")
        if not isinstance(metadata, dict):
            raise ApiError(422, "bad_request", "metadata must be a JSON object")
    items = []
    for part in parts:
        data = await part.read()
        name = upload_name(part.filename)
        items.append((name or "(no file name)", name, lambda data=data: data))
    batch = await asyncio.get_running_loop().run_in_executor(
        None, lambda: read_files(items, ingest, metadata)
    )
    if not batch.docs:
        causes = "; ".join(f"{o['name']}: {o['error']}" for o in batch.outcomes[:10])
        raise ApiError(422, "bad_request", one_line(f"no file gave a document: {causes}"))
    return batch


def router(
    service: Service, models: Models, guard: Guard, base: str = "/v1", listed: bool = True
) -> APIRouter:
    """The document and operation routes of one app.

    Parameters
    ----------
    service:
        The app's service.
    models:
        The app's request/response models.
    guard:
        The bearer-token guard.
    base:
        The routes' prefix: ``/v1`` (the first index's single-index routes) or
        ``/v1/indexes/{name}``.
    listed:
        Whether the OpenAPI document lists them (the per-index copies are not listed).

    Returns
    -------
    APIRouter
        The routes, to include in the app.
    """
    api = APIRouter(
        dependencies=guard.dependencies, route_class=JSONRoute, include_in_schema=listed
    )
    auth = guard.statuses
    ErrorOut = models.ErrorOut
    DocumentIn = models.DocumentIn
    docs_schema = {"type": "array", "minItems": 1, "items": models.DocumentIn.model_json_schema()}
    ndjson_schema = {"type": "string", "description": "one JSON document per line"}

    def accepted(op_dict: dict[str, Any]) -> Response:
        location = f"{base}/operations/{op_dict['id']}"
        return JSONResponse(op_dict, status_code=202, headers={"Location": location})

    @api.post(
        f"{base}/documents",
        status_code=202,
        summary="Queue documents for insertion (JSON list or JSONL upload)",
        response_model=models.OperationOut,
        responses=error_responses(413, 415, 422, 429, *auth, model=ErrorOut),
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": docs_schema},
                    "application/x-ndjson": {"schema": ndjson_schema},
                },
            }
        },
    )
    async def insert_documents(request: Request) -> Response:
        body = await request.body()
        content_type = request.headers.get("content-type", "")
        ingest = service.index.config.ingest

        def prepare() -> list[Document]:
            return validated_documents(parse_documents(body, content_type), ingest, DocumentIn)

        docs = await asyncio.get_running_loop().run_in_executor(None, prepare)
        return accepted(service.writer.submit("insert", [d.doc_id for d in docs], docs).to_dict())

    upload_schema = {
        "type": "object",
        "required": ["files"],
        "additionalProperties": False,
        "properties": {
            "files": {
                "type": "array",
                "minItems": 1,
                "items": {"type": "string", "format": "binary"},
                "description": "one part per file; its file name's ending picks the format",
            },
            "metadata": {"type": "string", "description": "a JSON object for every document"},
        },
    }

    @api.post(
        f"{base}/documents/upload",
        status_code=202,
        summary="Queue files (" + ", ".join(sorted(set(FORMATS.values()))) + ") for insertion",
        response_model=models.OperationOut,
        responses=error_responses(413, 415, 422, 429, *auth, model=ErrorOut),
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"multipart/form-data": {"schema": upload_schema}},
            }
        },
    )
    async def upload_documents(request: Request) -> Response:
        batch = await parsed_upload(request, service.index.config.ingest)
        ids = [d.doc_id for d in batch.docs]
        return accepted(service.writer.submit("insert", ids, batch.docs, batch).to_dict())

    @api.get(
        f"{base}/documents",
        summary="A page of the documents, ordered by doc_id",
        response_model=models.DocumentPage,
        responses=error_responses(422, 431, *auth, model=ErrorOut),
    )
    async def list_documents(
        request: Request,
        offset: Annotated[int, Query(ge=0, description="documents to skip")] = 0,
        limit: Annotated[int, Query(ge=1, le=1000, description="documents in the page")] = 50,
        q: Annotated[
            str | None, Query(max_length=200, description="substring of the doc_id or title")
        ] = None,
        filter: Annotated[
            str | None,
            Query(
                max_length=1000,
                description="a metadata filter as JSON (the search filters' syntax, "
                "docs/guide/filters.md)",
            ),
        ] = None,
    ) -> Response:
        only_params(request, "offset", "limit", "q", "filter")
        flt = None
        if filter is not None:
            try:
                flt = json.loads(filter)
            except ValueError as exc:
                raise ApiError(422, "bad_request", f"filter is not JSON: {exc}") from None
        page = service.index.documents(offset, limit, q, flt)
        for doc in page["documents"]:
            if service.writer.pending_for(doc["doc_id"]):
                doc["status"] = "pending"
        return JSONResponse(page)

    @api.delete(
        f"{base}/documents/{{doc_id:path}}",
        status_code=202,
        summary="Queue the deletion of a document",
        response_model=models.OperationOut,
        responses=error_responses(404, 429, *auth, model=ErrorOut),
    )
    async def delete_document(doc_id: str) -> Response:
        if document_status(service, doc_id) is None:
            raise ApiError(404, "not_found", f"document {doc_id!r} is not in the index")
        return accepted(service.writer.submit("delete", [doc_id], None).to_dict())

    @api.get(
        f"{base}/documents/{{doc_id:path}}",
        summary="Whether a document is committed, pending, or unknown",
        response_model=models.DocumentStatus,
        responses=error_responses(404, *auth, model=ErrorOut),
    )
    async def get_document(doc_id: str) -> Response:
        status = document_status(service, doc_id)
        if status is None:
            raise ApiError(404, "not_found", f"document {doc_id!r} is not in the index")
        return JSONResponse(status)

    @api.get(
        f"{base}/operations/{{op_id}}",
        summary="Status and report of a document operation",
        response_model=models.OperationOut,
        responses=error_responses(404, *auth, model=ErrorOut),
    )
    async def get_operation(op_id: str) -> Response:
        op = service.writer.get(op_id)
        if op is None:
            raise ApiError(404, "not_found", f"no operation {op_id!r}")
        return JSONResponse(op.to_dict())

    @api.get(
        f"{base}/operations",
        summary="The operations remembered, newest first",
        response_model=models.OperationList,
        responses=error_responses(422, *auth, model=ErrorOut),
    )
    async def list_operations(
        request: Request,
        limit: Annotated[int, Query(ge=1, le=1000, description="operations listed")] = 50,
    ) -> Response:
        only_params(request, "limit")
        return JSONResponse({"operations": [op.to_dict() for op in service.writer.recent(limit)]})

    @api.delete(
        f"{base}/operations/{{op_id}}",
        summary="Cancel a queued operation (409 once it runs or is over)",
        response_model=models.OperationOut,
        responses=error_responses(404, 409, *auth, model=ErrorOut),
    )
    async def cancel_operation(op_id: str) -> Response:
        op, cancelled = service.writer.cancel(op_id)
        if op is None:
            raise ApiError(404, "not_found", f"no operation {op_id!r}")
        if not cancelled:
            raise ApiError(409, "conflict", f"operation {op_id!r} is {op.status}: not cancelled")
        return JSONResponse(op.to_dict())

    return api
