/**
 * Off-heap page memory: {@link dev.varve.core.memory.PageMemory} holds the data region's frames (direct
 * {@code ByteBuffer}s), the page table from page id to frame, clock replacement of clean pages, dirty tracking, the
 * checkpoint's copy-on-write buffer and the write hooks (physical WAL, snapshot capture) that run on every change.
 *
 * <p>Locks, in the global order (see {@code dev.varve.engine}): page latches ({@code Frame}'s read/write latch) rank
 * below the checkpoint and partition locks and above the WAL and archive locks, which the write hooks take while the
 * page is write-latched; the page table's stripe monitors are innermost. A writer waiting for copy-on-write room
 * waits with its latch released.
 */
package dev.varve.core.memory;
