package dev.varve.snapshot;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A part's force may run beside a write (the checkpoint forces a Maplog's parts before it stops the archiver's
 * appends): a write under way when a force begins is left to the next force, which must not take the file for forced.
 */
class PartFileForceTest {
    /** Counts the fsyncs that reach the file system, and holds the next write inside the file system while armed. */
    private static final class HeldWrites extends ForwardingFileIOFactory {
        final AtomicInteger forces = new AtomicInteger();
        volatile CountDownLatch entered;
        volatile CountDownLatch release;

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            return new ForwardingFileIO(delegate.open(file, create)) {
                @Override
                public void write(ByteBuffer src, long position) throws IOException {
                    CountDownLatch in = entered;
                    if (in != null) {
                        entered = null;
                        in.countDown();
                        await(release);
                    }
                    delegate.write(src, position);
                }

                @Override
                public void force() throws IOException {
                    forces.incrementAndGet();
                    delegate.force();
                }
            };
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            assertTrue(latch.await(30, TimeUnit.SECONDS), "latch not released");
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    @Timeout(60)
    void aWriteUnderWayWhenAForceBeginsIsForcedByTheNext(@TempDir Path dir) throws Exception {
        HeldWrites io = new HeldWrites();
        PartFile part = PartFile.created(io, io.open(dir.resolve("part"), true), new DescriptorBudget(8));
        part.write(ByteBuffer.wrap(new byte[]{1}), 0);
        part.force();
        assertEquals(1, io.forces.get());
        part.force();
        assertEquals(1, io.forces.get(), "nothing written since the last force: no fsync");

        CountDownLatch entered = new CountDownLatch(1);
        io.release = new CountDownLatch(1);
        io.entered = entered;
        Thread writer = new Thread(() -> {
            try {
                part.write(ByteBuffer.wrap(new byte[]{2}), 1);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, "writer");
        writer.start();
        await(entered); // the write has begun and not reached the file yet
        part.force();
        assertEquals(2, io.forces.get(), "a write under way: the force goes to the file");
        io.release.countDown();
        writer.join();

        part.force();
        assertEquals(3, io.forces.get(), "the write the earlier force may have missed is forced now");
        part.force();
        assertEquals(3, io.forces.get());
        assertTrue(part.releasable(), "forced, it may let its descriptor go");
        part.close();
    }
}
