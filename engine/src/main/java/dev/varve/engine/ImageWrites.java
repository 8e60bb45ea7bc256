package dev.varve.engine;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * An image's uncached page writes, run behind the {@link ImageLoader}'s caller with up to {@value #IN_FLIGHT} at once.
 * An {@code O_DIRECT} write returns when the disk has the bytes, so a loader writing one run at a time kept one write
 * in flight: its thread waited out each one (JFR of a 1 GiB transfer beside a busy store: 3.4 s in 141 writes over 10
 * ms, the store's checkpoint writes queued on the same disk), and checked no pages meanwhile. Here each run is written
 * from a buffer of this class's own, aligned for the uncached write, on a thread of a small pool while the caller
 * checks the next: the buffer {@link #buffer} handed out, filled by the caller (no copy), or a copy of the caller's
 * run. With no buffer free the caller waits, so the memory held stays at {@value #IN_FLIGHT} runs however slow the disk.
 *
 * <p>A write that fails is reported, naming its file, by the next {@link #buffer}, {@link #write}, {@link #drain};
 * the loader drains before each fsync and before a file closes, so no fsync runs ahead of a write it should cover.
 * Not thread-safe: the loader's caller drives it.
 */
final class ImageWrites implements AutoCloseable {
    /** Writes in flight at once, and buffers held: enough for the disk to queue several, few enough to stay small. */
    static final int IN_FLIGHT = 4;

    private final int alignment;
    private final ExecutorService writers;
    /** Buffers no write holds; the pool grows to {@link #IN_FLIGHT}. */
    private final ArrayDeque<ByteBuffer> free = new ArrayDeque<>();
    /** Writes begun and not yet seen done by the caller, oldest first. */
    private final ArrayDeque<Write> inFlight = new ArrayDeque<>();
    /** The buffer {@link #buffer} handed out and no write has taken yet, or null. */
    private ByteBuffer handedOut;

    /** One run's write: the buffer it is written from, and its outcome (a {@link StorageException} naming the file). */
    private record Write(ByteBuffer buffer, CompletableFuture<Void> done) {
    }

    /** Writes of buffers aligned to {@code alignment} bytes (the page size: what uncached writes need). */
    ImageWrites(int alignment) {
        this.alignment = alignment;
        this.writers = Executors.newFixedThreadPool(IN_FLIGHT, r -> {
            Thread t = new Thread(r, "varve-image-write");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * A buffer for the caller to fill with its next run of up to {@code bytes} and hand to {@link #write}, which then
     * writes from it without a copy (or to {@link #giveBack}, when the run goes elsewhere); the same one until then.
     * Waits for a free buffer when {@value #IN_FLIGHT} writes are in flight, throwing the failure of any found done.
     */
    ByteBuffer buffer(int bytes) {
        if (handedOut != null && handedOut.capacity() >= bytes) return handedOut.clear();
        giveBack(handedOut);
        handedOut = take(bytes);
        return handedOut.clear();
    }

    /** Takes back the buffer {@link #buffer} handed out, if {@code b} is it: its run was not written from it. */
    void giveBack(ByteBuffer b) {
        if (b == null || b != handedOut) return;
        free.add(handedOut);
        handedOut = null;
    }

    /**
     * Begins writing {@code pages} (its remaining bytes) at {@code position} of {@code file}, whose path names it in a
     * failure: from {@code pages} itself when it is the buffer {@link #buffer} handed out, which the caller then
     * leaves alone; otherwise from a copy, and the caller may reuse {@code pages} at once. Waits for a free buffer
     * when {@value #IN_FLIGHT} writes are in flight, and throws the failure of any write found done meanwhile.
     */
    void write(FileIO file, Path path, ByteBuffer pages, long position) {
        ByteBuffer buffer;
        if (pages == handedOut && pages.alignmentOffset(pages.position(), alignment) == 0) {
            buffer = pages;
            handedOut = null;
        } else {
            buffer = take(pages.remaining());
            buffer.clear().put(pages.duplicate()).flip();
            giveBack(pages); // after the copy: a buffer handed out but not aligned at the run's start
        }
        ByteBuffer run = buffer.duplicate(); // the write moves its position, not the caller's
        inFlight.add(new Write(buffer, CompletableFuture.runAsync(() -> {
            try {
                file.write(run, position);
            } catch (IOException | RuntimeException e) {
                throw new StorageException("image page write failed: " + e.getMessage(), path, e);
            }
        }, writers)));
    }

    /** A buffer of at least {@code bytes}, once one is free; the failure of a write done meanwhile is thrown. */
    private ByteBuffer take(int bytes) {
        while (free.isEmpty() && inFlight.size() + (handedOut == null ? 0 : 1) >= IN_FLIGHT) reapOne();
        while (!inFlight.isEmpty() && inFlight.peek().done().isDone()) reapOne();
        ByteBuffer b = free.poll();
        if (b == null || b.capacity() < bytes) b = ByteBuffer.allocateDirect(bytes + alignment).alignedSlice(alignment); // as uncached writes need
        return b;
    }

    /** Waits until every write begun is done; throws the first failure among them. */
    void drain() {
        while (!inFlight.isEmpty()) reapOne();
    }

    /**
     * Sees the oldest write in flight done, waiting for it (uninterruptibly: a write under way finishes before its
     * buffer is reused or its file closes), and frees its buffer; throws its failure.
     */
    private void reapOne() {
        Write w = inFlight.poll();
        try {
            w.done().join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof Error err) throw err;
            throw (StorageException) e.getCause(); // the write's task throws nothing else
        } finally {
            free.add(w.buffer());
        }
    }

    /** Waits for the writes in flight (their failures are not thrown: the load is given up) and ends the threads. */
    @Override
    public void close() {
        handedOut = null;
        while (!inFlight.isEmpty()) {
            try {
                reapOne();
            } catch (StorageException ignored) {
                // closing without finish: the directory stays unfinished, and the failure no longer matters
            }
        }
        writers.shutdown();
        try {
            writers.awaitTermination(1, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
