package dev.varve.core.memory;

import dev.varve.core.util.StoreThreads;

import java.nio.ByteBuffer;

/**
 * Allocates a data region as direct buffers of up to {@value #CHUNK_BYTES} bytes, on up to one thread per core.
 * {@code allocateDirect} zero-fills its memory, so the kernel faults in every page of the region before the store can
 * open; on a VM that costs about a second per GiB on one thread (measured: 2.1 GiB in 1.0 s), most of a recovery's
 * open with a large region. Page faults in different mappings proceed in parallel, so several threads divide that.
 */
final class RegionChunks {
    static final int CHUNK_BYTES = 256 << 20;

    private RegionChunks() {
    }

    /** Frames of {@code pageSize} bytes in each chunk but the last. */
    static int framesPerChunk(int pageSize) {
        return Math.max(1, CHUNK_BYTES / pageSize);
    }

    /** Direct buffers holding {@code frames} pages of {@code pageSize} bytes, {@link #framesPerChunk} to a buffer. */
    static ByteBuffer[] allocate(int frames, int pageSize) {
        int perChunk = framesPerChunk(pageSize);
        ByteBuffer[] chunks = new ByteBuffer[(frames + perChunk - 1) / perChunk];
        int threads = Math.min(chunks.length, Runtime.getRuntime().availableProcessors());
        Throwable[] failures = new Throwable[threads];
        Thread[] helpers = new Thread[threads - 1];
        for (int t = 1; t < threads; t++) {
            int first = t;
            helpers[t - 1] = new Thread(() -> failures[first] = fill(chunks, first, threads, frames, perChunk, pageSize),
                    "varve-region-" + t + StoreThreads.suffix());
            helpers[t - 1].start();
        }
        failures[0] = fill(chunks, 0, threads, frames, perChunk, pageSize);
        boolean interrupted = false;
        for (Thread h : helpers) {
            while (true) {
                try {
                    h.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true; // the helper must finish before its chunks are read; the interrupt is kept
                }
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
        for (Throwable f : failures) {
            if (f instanceof RuntimeException r) throw r;
            if (f instanceof Error e) throw e;
        }
        return chunks;
    }

    /** Allocates chunks {@code first}, {@code first + step}, ...; returns what failed, or null. */
    private static Throwable fill(ByteBuffer[] chunks, int first, int step, int frames, int perChunk, int pageSize) {
        try {
            for (int c = first; c < chunks.length; c += step) {
                int n = Math.min(perChunk, frames - c * perChunk);
                chunks[c] = ByteBuffer.allocateDirect(n * pageSize);
            }
            return null;
        } catch (RuntimeException | Error e) {
            return e; // OutOfMemoryError ("Cannot reserve ... bytes of direct buffer memory") reaches the opener
        }
    }
}
