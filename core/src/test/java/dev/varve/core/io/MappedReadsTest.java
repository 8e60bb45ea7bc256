package dev.varve.core.io;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link FileIO#readMapped}: on Java 22 and later the real file system serves a sealed range through a mapping, the
 * bytes the file holds, and says no (false, nothing read) past it, for a file shorter than the range, and after a cut
 * into it; before Java 22 it always says no, as the test wrappers of a file do; a read racing the close fails as a closed channel,
 * never with a fault.
 */
@Timeout(60)
class MappedReadsTest {
    private static final int SIZE = 1 << 20;

    @TempDir
    Path dir;

    private Path fileOf(int size) throws IOException {
        byte[] bytes = new byte[size];
        for (int i = 0; i < size; i++) bytes[i] = (byte) (i * 31 + (i >>> 9));
        return Files.write(dir.resolve("segment"), bytes);
    }

    @Test
    void aSealedRangeReadsTheFilesBytesWhereMappingIsOffered() throws IOException {
        Path file = fileOf(SIZE);
        byte[] all = Files.readAllBytes(file);
        boolean mapped = Runtime.version().feature() >= 22 && !"false".equals(System.getProperty(SealedMapping.PROPERTY));
        assertEquals(mapped, SealedMapping.AVAILABLE, "offered on Java 22 and later only");
        assertEquals(mapped, FileIOFactory.standard().mapsSealedFiles(), "and said so by the factory, so callers ask only then");
        assertFalse(new ForwardingFileIOFactory() { }.mapsSealedFiles(), "not by a test seam's");
        try (FileIO f = FileIOFactory.standard().open(file, false)) {
            for (int at : new int[] {0, 4096 - 7, SIZE - 512}) {
                ByteBuffer dst = ByteBuffer.allocate(512);
                assertEquals(mapped, f.readMapped(dst, at, SIZE), "at " + at);
                if (!mapped) {
                    assertEquals(0, dst.position(), "nothing read where it says no");
                    continue;
                }
                assertEquals(512, dst.position());
                byte[] want = new byte[512];
                System.arraycopy(all, at, want, 0, 512);
                assertArrayEquals(want, dst.array(), "bytes at " + at);
            }
            ByteBuffer past = ByteBuffer.allocate(512);
            assertFalse(f.readMapped(past, SIZE - 100, SIZE), "a range past the sealed bytes");
            assertEquals(0, past.position());
            if (mapped) {
                f.truncate(SIZE / 2);
                ByteBuffer cut = ByteBuffer.allocate(512);
                assertFalse(f.readMapped(cut, 0, SIZE), "a file cut below the sealed length is not mapped again");
                assertEquals(0, cut.position());
            }
        }
        try (FileIO shorter = FileIOFactory.standard().open(fileOf(SIZE / 2), false)) {
            assertFalse(shorter.readMapped(ByteBuffer.allocate(64), 0, SIZE), "a file shorter than the sealed length");
        }
        try (FileIO seam = new ForwardingFileIO(FileIOFactory.standard().open(fileOf(SIZE), false)) { }) {
            assertFalse(seam.readMapped(ByteBuffer.allocate(64), 0, SIZE), "a test wrapper reads through read, which it watches");
        }
    }

    @Test
    void readsRacingTheCloseFailAsAClosedFile() throws Exception {
        Path file = fileOf(SIZE);
        ExecutorService readers = Executors.newFixedThreadPool(2);
        try {
            for (int round = 0; round < 20; round++) {
                FileIO f = FileIOFactory.standard().open(file, false);
                if (!f.readMapped(ByteBuffer.allocate(8), 0, SIZE)) {
                    f.close();
                    return; // nothing mapped on this Java: nothing to race
                }
                AtomicBoolean go = new AtomicBoolean(true);
                Future<Long> reads = readers.submit(() -> {
                    long n = 0;
                    ByteBuffer dst = ByteBuffer.allocate(4096);
                    try {
                        while (go.get()) {
                            dst.clear();
                            assertTrue(f.readMapped(dst, (n * 4096) % SIZE, SIZE));
                            n++;
                        }
                    } catch (ClosedChannelException closed) {
                        return -n - 1;
                    }
                    return n;
                });
                Thread.sleep(2);
                f.close();
                go.set(false);
                reads.get(10, TimeUnit.SECONDS); // a fault would end the JVM or throw an Error here, not a ClosedChannelException
                assertThrows(ClosedChannelException.class, () -> f.readMapped(ByteBuffer.allocate(8), 0, SIZE), "after close");
            }
        } finally {
            readers.shutdownNow();
        }
    }
}
