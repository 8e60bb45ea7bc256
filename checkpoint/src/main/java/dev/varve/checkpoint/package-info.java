/**
 * The checkpointer and what it writes. {@link dev.varve.checkpoint.Checkpointer} runs the protocol (mark under the
 * checkpoint write lock, copy-on-write, recovery files or physical WAL, the snapshot layer's flush, start marker,
 * sorted parallel page writes, end marker, WAL and recovery-file deletion); {@code CheckpointTrigger} is the agent
 * that decides when one is due; {@code CheckpointPool} spreads page and recovery-file writes over the checkpoint
 * threads; {@link dev.varve.checkpoint.Throttle} slows writers by the copy-on-write buffer's fill;
 * {@link dev.varve.checkpoint.CheckpointMarkers} and {@code CheckpointMarker} are the start/end marker files;
 * {@code RecoveryFileWriter}/{@code RecoveryFileReader} ({@code RecoveryFileFormat} draws the layout, {@code PageCodec}
 * the SNAPPY and SKIP_GARBAGE compressions) hold page images for binary restore; {@code PhysicalPageLog} is
 * {@code WAL_PHYSICAL} mode's page-image hook.
 *
 * <p>Locks, in the global order (see {@code dev.varve.engine}): the run lock ({@code Checkpointer.running}) is
 * outermost — one checkpoint at a time — then the checkpoint lock, whose write lock the checkpointer holds only to
 * take the mark. Page writes read each page under its read latch, one at a time; the snapshot flush waits for the
 * archiver holding only the run lock. The physical page log appends to the WAL under a page's write latch.
 */
package dev.varve.checkpoint;
