/**
 * `npm run generate:env`: writes .env.example from the configuration table in src/config.ts, so the file
 * lists exactly the variables the service reads, with their defaults, then the OpenTelemetry variables
 * (src/telemetry/variables.ts). test/deploy.test.ts fails when the committed file differs from what this
 * generates.
 */
import { writeFileSync } from 'node:fs';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { VARIABLES, type Variable } from '../src/config.js';
import { TRACING_VARIABLES } from '../src/telemetry/variables.js';

export const ENV_EXAMPLE = fileURLToPath(new URL('../.env.example', import.meta.url));

export function renderEnvExample(): string {
  const lines = [
    '# Every environment variable the Pet Adoption Service reads, with its default (README: Configuration).',
    '# Generated from src/config.ts by `npm run generate:env`; edit the table there, not this file.',
    '# A commented-out variable is unset by default.',
  ];
  const render = (variable: Variable): void => {
    lines.push('', `# ${variable.description}`);
    lines.push(
      variable.default === undefined ? `# ${variable.name}=` : `${variable.name}=${variable.default}`,
    );
  };
  VARIABLES.forEach(render);
  lines.push(
    '',
    '# Tracing (docs/operations.md, "Tracing"): the OpenTelemetry SDK reads these itself; tracing is off until',
    '# an endpoint or an exporter is set.',
  );
  TRACING_VARIABLES.forEach(render);
  return `${lines.join('\n')}\n`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(ENV_EXAMPLE, renderEnvExample());
  process.stdout.write(`wrote ${ENV_EXAMPLE}\n`);
}
