// The Kubernetes API double for tests (issue 13); see README.md.
export { startK8sDouble, forbiddenWhy } from './server.js';
export type { K8sDouble, K8sDoubleOptions, RecordedRequest, UserInfo, KObject } from './server.js';
export type { ExecRunner, ExecProcess, ExecRequest } from './exec.js';
export { EXEC_PROTOCOLS } from './exec.js';
export { signServingCert } from './tls.js';
