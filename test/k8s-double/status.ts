// Errors as a Kubernetes API server sends them: a meta/v1 Status object
// with the HTTP code, a reason and the messages real servers print.

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: { reason?: string; message?: string; field?: string }[];
}

export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details: StatusDetails = {},
  ) {
    super(message);
  }

  toStatus(): object {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      details: this.details,
      code: this.code,
    };
  }
}

/** `pods`, or `deployments.apps` for a named group, as real messages write it. */
export function qualified(group: string, plural: string): string {
  return group === '' ? plural : `${plural}.${group}`;
}

function details(group: string, plural: string, name: string): StatusDetails {
  const d: StatusDetails = { kind: plural };
  if (name !== '') d.name = name;
  if (group !== '') d.group = group;
  return d;
}

export const errors = {
  notFound: (group: string, plural: string, name: string): ApiError =>
    new ApiError(
      404,
      'NotFound',
      `${qualified(group, plural)} "${name}" not found`,
      details(group, plural, name),
    ),
  alreadyExists: (group: string, plural: string, name: string): ApiError =>
    new ApiError(
      409,
      'AlreadyExists',
      `${qualified(group, plural)} "${name}" already exists`,
      details(group, plural, name),
    ),
  conflict: (group: string, plural: string, name: string): ApiError =>
    new ApiError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${qualified(group, plural)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      details(group, plural, name),
    ),
  forbidden: (group: string, plural: string, name: string, why: string): ApiError =>
    new ApiError(
      403,
      'Forbidden',
      `${qualified(group, plural)}${name === '' ? '' : ` "${name}"`} is forbidden: ${why}`,
      details(group, plural, name),
    ),
  invalid: (kind: string, group: string, name: string, message: string): ApiError =>
    new ApiError(422, 'Invalid', `${qualified(group, kind)} "${name}" is invalid: ${message}`, {
      kind,
      name,
      ...(group === '' ? {} : { group }),
    }),
  badRequest: (message: string): ApiError => new ApiError(400, 'BadRequest', message),
  unauthorized: (): ApiError => new ApiError(401, 'Unauthorized', 'Unauthorized'),
  methodNotAllowed: (): ApiError =>
    new ApiError(
      405,
      'MethodNotAllowed',
      'the server does not allow this method on the requested resource',
    ),
  unsupportedMediaType: (type: string): ApiError =>
    new ApiError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got ${type})`,
    ),
  pathNotFound: (): ApiError =>
    new ApiError(404, 'NotFound', 'the server could not find the requested resource'),
};
