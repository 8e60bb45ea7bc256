/**
 * Crash recovery at open. {@link dev.varve.recovery.RecoveryStart} reads the checkpoint markers before anything is
 * written and decides where recovery starts: the latest complete checkpoint, and whether a started one must be
 * restored (its recovery files or the physical WAL), refusing damage with the file and offset.
 * {@link dev.varve.recovery.Recovery} carries it out — binary restore, logical replay through the engine, a final
 * checkpoint — and {@link dev.varve.recovery.RecoveryReport} says what it did. Runs on the opening thread before any
 * writer or agent exists, so it takes the store's locks only through the checkpointer it calls.
 */
package dev.varve.recovery;
