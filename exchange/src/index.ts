export { buildApp } from './app.js';
export type { AppConfig } from './app.js';
export { loadConfig } from './config.js';
export type { Config } from './config.js';
