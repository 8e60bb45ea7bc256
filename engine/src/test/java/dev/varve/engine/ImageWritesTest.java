package dev.varve.engine;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.StorageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ImageWrites}: runs written behind the caller land where they were asked to, from a copy (the caller reuses
 * its buffer at once) or from a buffer handed out to be filled; no more than {@link ImageWrites#IN_FLIGHT} are in
 * flight, the caller waiting for a buffer beyond that; a write that fails is reported by the next call, naming its file.
 */
@Timeout(60)
class ImageWritesTest {
    private static final int PAGE = 4096;

    @TempDir
    Path dir;

    /**
     * Sixteen runs written out of order, each from one buffer of the caller's reused for all of them (copied) or from
     * the buffer handed out (written from as it is), land where they were asked to.
     */
    @ParameterizedTest(name = "from a handed-out buffer: {0}")
    @ValueSource(booleans = {false, true})
    void runsLandWhereAsked(boolean handedOut) throws IOException {
        Path path = dir.resolve("f");
        byte[] expected = new byte[64 * PAGE];
        try (FileIO file = FileIOFactory.standard().open(path, true); ImageWrites writes = new ImageWrites(PAGE)) {
            ByteBuffer callers = ByteBuffer.allocate(4 * PAGE);
            for (int r = 15; r >= 0; r--) {
                ByteBuffer run = handedOut ? writes.buffer(4 * PAGE) : callers.clear();
                if (handedOut) assertTrue(run.isDirect() && run.alignmentOffset(0, PAGE) == 0, "aligned for uncached writes");
                for (int i = 0; i < 4 * PAGE; i++) run.put((byte) (r * 31 + i));
                run.flip();
                run.get(0, expected, r * 4 * PAGE, run.remaining());
                writes.write(file, path, run, (long) r * 4 * PAGE);
            }
            writes.drain();
        }
        assertArrayEquals(expected, Files.readAllBytes(path));
    }

    @Test
    void theCallerWaitsWhenFourWritesAreInFlight() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger inFlight = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        Path path = dir.resolve("f");
        try (FileIO file = new ForwardingFileIO(FileIOFactory.standard().open(path, true)) {
            @Override
            public void write(ByteBuffer src, long position) throws IOException {
                most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                try {
                    release.await();
                } catch (InterruptedException e) {
                    throw new IOException(e);
                }
                super.write(src, position);
                inFlight.decrementAndGet();
            }
        }; ImageWrites writes = new ImageWrites(PAGE)) {
            ByteBuffer run = ByteBuffer.allocate(PAGE);
            for (int i = 0; i < ImageWrites.IN_FLIGHT; i++) writes.write(file, path, run.clear(), (long) i * PAGE); // none waits
            Thread fifth = new Thread(() -> writes.write(file, path, ByteBuffer.allocate(PAGE), (long) ImageWrites.IN_FLIGHT * PAGE));
            fifth.start();
            while (fifth.getState() != Thread.State.WAITING) Thread.onSpinWait(); // waits for a buffer, no write begun
            assertEquals(ImageWrites.IN_FLIGHT, writesBegunOnceSettled(inFlight));
            release.countDown();
            fifth.join();
            writes.drain();
            assertEquals(0, inFlight.get());
            assertEquals(ImageWrites.IN_FLIGHT, most.get(), "never more than " + ImageWrites.IN_FLIGHT + " writes in flight");
        }
        assertEquals((ImageWrites.IN_FLIGHT + 1L) * PAGE, Files.size(path));
    }

    /** The writes in flight once the pool's threads have all picked theirs up. */
    private static int writesBegunOnceSettled(AtomicInteger inFlight) {
        while (inFlight.get() < ImageWrites.IN_FLIGHT) Thread.onSpinWait();
        return inFlight.get();
    }

    @Test
    void aFailedWriteIsReportedByTheNextCallNamingItsFile() throws IOException {
        Path path = dir.resolve("t00001-p00002.page");
        try (FileIO file = new ForwardingFileIO(FileIOFactory.standard().open(path, true)) {
            @Override
            public void write(ByteBuffer src, long position) throws IOException {
                throw new IOException("No space left on device");
            }
        }; ImageWrites writes = new ImageWrites(PAGE)) {
            writes.write(file, path, ByteBuffer.allocate(PAGE), 0);
            StorageException e = assertThrows(StorageException.class, writes::drain);
            assertTrue(e.getMessage().contains("No space left on device"), e.getMessage());
            assertTrue(e.getMessage().contains(path.toString()), e.getMessage());
        }
    }
}
