/**
 * The command line as a user meets it, through the built CLI (`node dist/cli.js`): help on every command,
 * the version, refusals of unknown arguments (serve included), the messages for bad values, never creating
 * a database outside serve/migrate, expired keys, and progress on a terminal.
 * `npm test` builds first; run `npm run build` before running this file alone.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/index.js';
import { mintKey } from '../src/modules/accounts/mint.js';
import { accountRepository } from '../src/modules/accounts/repository.js';
import { backends, IN_CI } from './helpers.js';
import {
  baseEnv,
  CLI,
  cli,
  environmentFor,
  ROOT,
  waitForExit,
  type Environment,
} from '../support/processes.js';

const COMMANDS = [
  ['serve'],
  ['migrate'],
  ['seed'],
  ['keys'],
  ['keys', 'create'],
  ['keys', 'list'],
  ['keys', 'revoke'],
  ['accounts'],
  ['accounts', 'unban'],
  ['orders'],
  ['orders', 'list'],
  ['orders', 'cancel'],
  ['webhooks'],
  ['webhooks', 'list'],
  ['webhooks', 'deliveries'],
];

/** Every command that works on an existing database, with arguments it would accept. */
const DATABASE_COMMANDS = [
  ['seed', '--pets', '1'],
  ['keys', 'create', '--account', 'nobody'],
  ['keys', 'list'],
  ['keys', 'revoke', 'key_whatever'],
  ['accounts', 'unban', 'nobody'],
  ['orders', 'list'],
  ['orders', 'cancel', '1'],
  ['webhooks', 'list'],
  ['webhooks', 'deliveries', '1'],
];

describe('CLI: help, version and usage mistakes', () => {
  let dir: string;
  /** A database path that must never come to exist: no test here may create a database. */
  let dbPath: string;
  let env: Record<string, string>;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'pet-adoption-cli-'));
    dbPath = join(dir, 'data', 'never.db');
    env = { DATABASE_URL: `sqlite:${dbPath}` };
  });
  after(() => {
    assert.equal(existsSync(join(dir, 'data')), false, 'no command here creates a database');
    rmSync(dir, { recursive: true, force: true });
  });

  test('a bare pet-adoption prints the usage on stderr and exits 2', async () => {
    const out = await cli([], env);
    assert.equal(out.code, 2);
    assert.equal(out.stdout, '');
    assert.match(out.stderr, /a command is needed/);
    assert.match(out.stderr, /Usage: pet-adoption <command>/);
  });

  test('--help, -h and help print the usage on stdout and exit 0', async () => {
    for (const flag of ['--help', '-h', 'help']) {
      const out = await cli([flag], env);
      assert.equal(out.code, 0, flag);
      assert.equal(out.stderr, '');
      assert.match(out.stdout, /^Usage: pet-adoption <command>/);
      assert.match(out.stdout, /keys create --account NAME/);
    }
  });

  test('--version and -v print the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const out = await cli([flag], env);
      assert.equal(out.code, 0);
      assert.equal(out.stdout, `${version}\n`);
    }
  });

  test('every command and subcommand answers --help and -h on stdout, exit 0, whatever the configuration', async () => {
    // An invalid configuration proves help reads none.
    const broken = { DATABASE_URL: 'mysql://nope' };
    for (const command of COMMANDS) {
      for (const flag of ['--help', '-h']) {
        const out = await cli([...command, flag], broken);
        const name = command.join(' ');
        assert.equal(out.code, 0, `${name} ${flag}: ${out.stderr}`);
        assert.equal(out.stderr, '', name);
        assert.match(out.stdout, new RegExp(`^Usage: pet-adoption ${name}\\b`), name);
      }
    }
    const topic = await cli(['help', 'orders'], broken);
    assert.match(topic.stdout, /^Usage: pet-adoption orders <list\|cancel>/);
  });

  test('serve refuses arguments (serve --port 1, serve --bogus) with exit 2 instead of listening', async () => {
    for (const args of [['--port', '1'], ['--bogus'], ['now']]) {
      const out = await cli(['serve', ...args], env);
      assert.equal(out.code, 2, `serve ${args.join(' ')}: ${out.stderr}`);
      assert.ok(out.stderr.includes(`serve takes no arguments, got "${args.join(' ')}"`), out.stderr);
      assert.match(out.stderr, /set PORT, HOST/);
      assert.doesNotMatch(out.stderr, /listening on/);
    }
  });

  test('an unknown option is refused by every command, naming it, exit 2', async () => {
    for (const command of COMMANDS.filter((c) => c.length === 2 || ['migrate', 'seed'].includes(c[0]!))) {
      const out = await cli([...command, '--bogus'], env);
      const name = command.join(' ');
      assert.equal(out.code, 2, `${name}: ${out.stderr}`);
      assert.match(out.stderr, /^pet-adoption: unknown option '--bogus'\n/, name);
      assert.match(out.stderr, new RegExp(`Usage: pet-adoption ${name}\\b`), `${name} shows its own usage`);
    }
    const top = await cli(['--bogus'], env);
    assert.equal(top.code, 2);
    assert.match(top.stderr, /unknown option "--bogus"/);
  });

  test('stray arguments, unknown commands and subcommands are refused, naming them, exit 2', async () => {
    const cases: [string[], RegExp][] = [
      [['migrate', 'now'], /migrate takes no argument "now"/],
      [['keys', 'list', 'extra'], /keys list takes no argument "extra"/],
      [['orders', 'list', 'extra'], /orders list takes no argument "extra"/],
      [['webhooks', 'list', 'extra'], /webhooks list takes no argument "extra"/],
      [['seed', '--pets', '3', 'extra'], /seed takes no argument "extra"/],
      [['keys', 'create', '--account', 'a', 'extra'], /keys create takes no argument "extra"/],
      [['keys', 'revoke'], /keys revoke needs exactly one KEY_ID/],
      [['accounts', 'unban', 'a', 'b'], /accounts unban needs exactly one account NAME/],
      [['orders', 'cancel'], /orders cancel needs exactly one order ID/],
      [['webhooks', 'deliveries'], /webhooks deliveries needs exactly one ENDPOINT_ID/],
      [['adopt'], /unknown command "adopt"/],
      [['keys', 'rotate'], /unknown keys subcommand "rotate"; use create, list, revoke/],
      [['keys'], /keys needs a subcommand: create, list, revoke/],
      [['accounts'], /accounts needs a subcommand: unban/],
      [['keys', 'create'], /keys create needs --account NAME/],
      [['keys', 'create', '--account'], /option '--account <value>' argument missing/],
      [['keys', 'create', '--account', 'a', '--plan', 'gold'], /--plan must be one of free, pro, business/],
      [['keys', 'list', '--json=yes'], /option '--json' does not take an argument/],
    ];
    for (const [args, message] of cases) {
      const out = await cli(args, env);
      assert.equal(out.code, 2, `${args.join(' ')}: ${out.stderr}`);
      assert.equal(out.stdout, '');
      assert.match(out.stderr, message, args.join(' '));
      assert.match(out.stderr, /Usage: pet-adoption/, 'the usage follows the message');
    }
  });

  test('seed --pets says what is wrong with the number', async () => {
    for (const value of ['-1', '0', 'abc', '1.5', '-0']) {
      const out = await cli(['seed', '--pets', value], env);
      assert.equal(out.code, 2, value);
      assert.ok(
        out.stderr.startsWith(`pet-adoption: --pets must be a positive whole number, got "${value}"\n`),
        out.stderr,
      );
    }
    const missing = await cli(['seed'], env);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /seed needs --pets N/);
  });

  test('keys create --expires refuses a date in the past and one that is not a date', async () => {
    const past = await cli(['keys', 'create', '--account', 'a', '--expires', '2020-01-01'], env);
    assert.equal(past.code, 2);
    assert.match(
      past.stderr,
      /--expires 2020-01-01 is in the past \(now is \d{4}-.*\); give a future date\/time/,
    );
    const garbage = await cli(['keys', 'create', '--account', 'a', '--expires', 'soon'], env);
    assert.equal(garbage.code, 2);
    assert.match(garbage.stderr, /--expires must be an ISO-8601 date\/time, got "soon"/);
  });

  test('an invalid configuration names the variable, exit 2', async () => {
    const out = await cli(['keys', 'list'], { DATABASE_URL: 'mysql://nope' });
    assert.equal(out.code, 2);
    assert.match(out.stderr, /invalid configuration: DATABASE_URL/);
  });
});

for (const backend of await backends()) {
  describe(`CLI on a database [${backend.name}]`, () => {
    let environment: Environment;
    before(async () => {
      environment = await environmentFor(backend);
    });
    after(() => environment.cleanup());

    test('commands other than serve and migrate never create a database; they say where none is', async () => {
      const sqlitePath = environment.env.DATABASE_URL!.startsWith('sqlite:')
        ? environment.env.DATABASE_URL!.slice('sqlite:'.length)
        : undefined;
      for (const args of DATABASE_COMMANDS) {
        const out = await cli(args, environment.env);
        assert.equal(out.code, 1, `${args.join(' ')}: ${out.stderr}`);
        assert.equal(out.stdout, '');
        assert.match(out.stderr, /^pet-adoption: no database exists at /, args.join(' '));
        assert.match(out.stderr, /run "pet-adoption migrate" \(or start the server\) first/);
        if (sqlitePath) {
          assert.ok(out.stderr.includes(sqlitePath), 'the message names the path');
          assert.equal(existsSync(sqlitePath), false, `${args.join(' ')} created ${sqlitePath}`);
        } else {
          assert.doesNotMatch(out.stderr, /postgres:\/\/[^ ]*:[^*@ ]+@/, 'no password in the message');
        }
      }
      const migrated = await cli(['migrate'], environment.env);
      assert.equal(migrated.code, 0, migrated.stderr);
      assert.equal(migrated.stdout, 'Migrations applied.\n');
      const listed = await cli(['keys', 'list'], environment.env);
      assert.equal(listed.code, 0, listed.stderr);
      assert.equal(listed.stdout, 'No keys.\n');
    });

    test('a refused --expires creates nothing; keys list shows expired keys as expired', async () => {
      const refused = await cli(
        ['keys', 'create', '--account', 'late', '--expires', '2001-09-09T01:46:40Z'],
        environment.env,
      );
      assert.equal(refused.code, 2);
      assert.equal((await cli(['keys', 'list', '--account', 'late'], environment.env)).stdout, 'No keys.\n');

      const future = new Date(Date.now() + 86_400_000).toISOString();
      const fresh = await cli(
        ['keys', 'create', '--account', 'late', '--expires', future, '--json'],
        environment.env,
      );
      assert.equal(fresh.code, 0, fresh.stderr);
      // A key whose expiry has passed since it was made (made here with a past expiry, as time would).
      const database = await openDatabase(loadConfig(environment.env));
      const accounts = database.repository(accountRepository);
      const account = (await accounts.findAccount('late'))!;
      const expiredAt = Date.now() - 60_000;
      const old = await mintKey(accounts, account.id, expiredAt - 86_400_000, expiredAt, null);
      await database.close();

      const text = await cli(['keys', 'list', '--account', 'late'], environment.env);
      assert.equal(text.code, 0, text.stderr);
      const lines = text.stdout.trim().split('\n');
      const oldLine = lines.find((l) => l.startsWith(old.id))!;
      assert.match(oldLine, new RegExp(` expired ${new Date(expiredAt).toISOString()} `));
      const freshId = (JSON.parse(fresh.stdout) as { id: string }).id;
      assert.match(
        lines.find((l) => l.startsWith(freshId))!,
        new RegExp(` expires ${future} `),
      );

      const json = await cli(['keys', 'list', '--account', 'late', '--json'], environment.env);
      const rows = JSON.parse(json.stdout) as { id: string; state: string }[];
      assert.equal(rows.find((r) => r.id === old.id)!.state, 'expired');
      assert.equal(rows.find((r) => r.id === freshId)!.state, 'active');
      assert.equal((await cli(['keys', 'revoke', freshId], environment.env)).code, 0);
      const revoked = JSON.parse(
        (await cli(['keys', 'list', '--account', 'late', '--json'], environment.env)).stdout,
      ) as {
        id: string;
        state: string;
      }[];
      assert.equal(revoked.find((r) => r.id === freshId)!.state, 'revoked');
    });

    test('seed prints no progress when stderr is not a terminal', async () => {
      const out = await cli(['seed', '--pets', '60000'], environment.env, 120_000);
      assert.equal(out.code, 0, out.stderr);
      assert.equal(out.stdout, 'Added 60000 demo pets.\n');
      assert.equal(out.stderr, '');
    });
  });
}

const scriptInstalled = !spawnSync('script', ['--version']).error;
if (!scriptInstalled) {
  if (IN_CI) throw new Error('CI=true requires `script` (util-linux) for the terminal progress test');
  console.log('# NOTICE: skipping the terminal progress test: `script` (util-linux) is not on PATH');
}

describe('CLI on a terminal', { skip: !scriptInstalled }, () => {
  test('seed shows its progress on a terminal, chunk by chunk, ending at 100%', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-tty-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const env = { DATABASE_URL: `sqlite:${join(dir, 'tty.db')}` };
    assert.equal((await cli(['migrate'], env)).code, 0);
    // `script` runs the command on a pseudo-terminal of its own: stderr isTTY, as in a user's shell.
    const child = spawn(
      'script',
      ['-qec', `"${process.execPath}" "${CLI}" seed --pets 120000`, '/dev/null'],
      { env: baseEnv(env), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const exit = await waitForExit(child, 120_000);
    assert.equal(exit.code, 0, output);
    assert.match(output, /\rAdding demo pets: 50,000\/120,000 \(41%\)/);
    assert.match(output, /\rAdding demo pets: 100,000\/120,000 \(83%\)/);
    assert.match(output, /\rAdding demo pets: 120,000\/120,000 \(100%\)\r?\n/);
    assert.match(output, /Added 120000 demo pets\./);
  });
});
