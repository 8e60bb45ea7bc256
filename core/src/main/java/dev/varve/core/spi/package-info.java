/**
 * The seams between the modules that core cannot name: the WAL record types every layer agrees on
 * ({@link dev.varve.core.spi.RecordTypes}), the checkpoint protocol's listener (the snapshot archive,
 * {@link dev.varve.core.spi.CheckpointListener}) and logical replay (the engine, {@link dev.varve.core.spi.LogicalReplay}).
 * A listener's {@code onMark} runs under the checkpoint write lock; the other callbacks hold no store lock.
 */
package dev.varve.core.spi;
