/**
 * rerun-gate: the TypeScript client kit of Rerun Gate.
 *
 * - `Client`: register operations (with retries and one Idempotency-Key per registration), report steps with
 *   the step helper `withStep`, read operations back.
 * - `RerunReceiver`: receive rerun calls (Standard Webhooks), once per webhook-id.
 * - `FileStore` / `MemoryStore`: where seqs and webhook receipts are kept.
 */
export { Client } from "./client.js";
export type {
  ClientOptions,
  FetchLike,
  Logger,
  RegisterInput,
  RegisterStepInput,
  StepContext,
  WithStepOptions,
} from "./client.js";
export { RerunReceiver } from "./receiver.js";
export type {
  HeadersLike,
  ReceiveOutcome,
  ReceiveResult,
  ReceiverAnswer,
  RerunReceiverOptions,
} from "./receiver.js";
export { FileStore, MemoryStore } from "./stores.js";
export type { ClaimResult, FileStoreOptions, ReceiptStore, SeqStore } from "./stores.js";
export { classifyError } from "./outcome.js";
export type { Outcome } from "./outcome.js";
export { stepReportOf } from "./reported.js";
export type { StepReport } from "./reported.js";
export {
  BadRequest,
  IdempotencyKeyInFlight,
  IdempotencyKeyMismatch,
  IdempotencyKeyTaken,
  InvalidToken,
  NetworkError,
  NotFound,
  OutcomeUnknown,
  ProcessIdExists,
  RateLimited,
  RerunGateError,
  ServerUnavailable,
  StaleSeq,
  StepFailed,
  TokenMissing,
  ValidationFailed,
  outcomeOfStatus,
} from "./errors.js";
export type { FieldError, Problem, RerunGateErrorInit } from "./errors.js";
export { ERROR_CLASSES } from "./types.js";
export type {
  ErrorClass,
  JsonObject,
  OperationStatus,
  OperationView,
  RegisterOperationBody,
  Registration,
  RegistrationWarning,
  Rerun,
  RerunStep,
  StepError,
  StepEventAnswer,
  StepEventBody,
  StepEventType,
  StepState,
  StepView,
  Usage,
  Verdict,
} from "./types.js";
