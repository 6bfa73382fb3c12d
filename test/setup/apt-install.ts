// Installs Debian packages the suite needs when they are missing and we are root (as on CI and fresh
// machines); one apt-get at a time, since two would fight over dpkg's lock.

let queue: Promise<unknown> = Promise.resolve();

/** `apt-get update && apt-get install -y <packages>`, after any install already running; rejects on failure. */
export function aptInstall(packages: readonly string[], what: string): Promise<void> {
  const run = queue.then(async () => {
    const { spawn } = await import('node:child_process');
    const list = packages.join(' ');
    console.log(`${what} not found: installing it with \`apt-get update && apt-get install -y ${list}\``);
    await new Promise<void>((resolve, reject) => {
      const child = spawn('sh', ['-c', `apt-get update -q && apt-get install -y -q ${list}`], {
        stdio: ['ignore', 'inherit', 'inherit'],
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      });
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0 ? resolve() : reject(new Error(`installing ${list} with apt-get failed (exit ${code})`)),
      );
    });
  });
  queue = run.catch(() => undefined);
  return run;
}
