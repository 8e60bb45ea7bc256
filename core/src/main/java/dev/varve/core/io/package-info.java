/**
 * Every file access of the store goes through {@link dev.varve.core.io.FileIOFactory} and
 * {@link dev.varve.core.io.FileIO}, so tests can swap in a file system that fails, reorders or drops unsynced
 * writes. Also the failure types — {@link dev.varve.core.io.StorageException} (an IO failure, with the file) and
 * {@link dev.varve.core.io.CorruptionException} (damage, with file and offset), and
 * {@link dev.varve.core.io.PartitionFullException} (a write refused at a partition's page limit) — and the crash-safe file helpers
 * ({@code DurableFiles}: write to a temporary file, fsync, rename, fsync the directory). No locks: callers serialise
 * their own writes to a file.
 */
package dev.varve.core.io;
