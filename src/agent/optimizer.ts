import { setFlagsFromString } from 'node:v8';

/**
 * V8's optimising compiler (TurboFan) is held while the agent boots and rehearses its inject, and
 * let go just before the app starts. Whatever it optimises pulls the compiler's own machine code
 * into the process: about 3.5 MB of the node binary resident in every warm sandbox, which a bare
 * `node server.js` serving nothing never touches. The rehearsal still leaves bytecode, baseline
 * code and type feedback behind, which is what a deploy gains from it (the bench's deploy rows do
 * not move). The app runs with the optimiser, as under plain node: the sandbox's node takes no
 * V8 flags of its own, so on is the default being restored.
 */
export function holdOptimizer(): void {
  setFlagsFromString('--no-turbofan');
}

export function releaseOptimizer(): void {
  setFlagsFromString('--turbofan');
}
