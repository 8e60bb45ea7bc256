package dev.varve.core.memory;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * Allocates a {@link PageSlots} pool (the checkpoint buffer, the capture buffer) as direct buffers of up to
 * {@value #CHUNK_BYTES} bytes, in parallel. {@code allocateDirect} zero-fills its memory, so the kernel faults in
 * every page of a pool before the store can open; page faults in different mappings proceed in parallel, so the
 * chunks are allocated by {@link Arrays#parallelSetAll} (the common fork-join pool and the calling thread: one thread
 * per core). The data region, larger and often mostly unused, is allocated as it is used instead ({@link GrowingRegion}).
 */
final class RegionChunks {
    static final int CHUNK_BYTES = 256 << 20;

    private RegionChunks() {
    }

    /** Frames of {@code pageSize} bytes in each chunk but the last. */
    static int framesPerChunk(int pageSize) {
        return Math.max(1, CHUNK_BYTES / pageSize);
    }

    /**
     * Direct buffers holding {@code frames} pages of {@code pageSize} bytes, {@link #framesPerChunk} to a buffer. An
     * {@code OutOfMemoryError} ("Cannot reserve ... bytes of direct buffer memory") reaches the opener as it was thrown.
     */
    static ByteBuffer[] allocate(int frames, int pageSize) {
        int perChunk = framesPerChunk(pageSize);
        ByteBuffer[] chunks = new ByteBuffer[(frames + perChunk - 1) / perChunk];
        try {
            Arrays.parallelSetAll(chunks, c -> ByteBuffer.allocateDirect(Math.min(perChunk, frames - c * perChunk) * pageSize));
        } catch (OutOfMemoryError e) {
            // met on a pool thread, it comes back as a new error without a message, the original its cause
            throw e.getCause() instanceof OutOfMemoryError original ? original : e;
        }
        return chunks;
    }
}
