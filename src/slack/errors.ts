import { CodedError } from "../domain/errors.js";

/**
 * Codes of Slack Web API answers the broker cannot use. `unexpected_response`: an ok answer that
 * lacks the field the call exists for; `too_many_pages`: a listing past the broker's page bound.
 */
export type SlackApiErrorCode = "unexpected_response" | "too_many_pages";

/** A Slack answer the broker refuses; the message names the method, never a token or Slack's body. */
export class SlackApiError extends CodedError<SlackApiErrorCode> {
  override readonly name = "SlackApiError";
}
