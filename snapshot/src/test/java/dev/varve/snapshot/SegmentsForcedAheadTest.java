package dev.varve.snapshot;

import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.StorageException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A Pagelog forces each filled segment on a thread of its own once the next one begins, not only at the checkpoint
 * (nor on the archiver's path past eight unforced ones): a power cut keeps them whole, and a force that failed there
 * is reported by the next force rather than lost.
 */
@Timeout(60)
class SegmentsForcedAheadTest {
    private static final int PAGE = PagelogDamageTest.PAGE;
    private static final long SEGMENT = PagelogDamageTest.SEGMENT; // 16 records
    private static final int RECORDS = 16;

    @TempDir
    Path dir;

    @Test
    void filledSegmentsSurviveAPowerCutWithNoCheckpoint() throws IOException {
        FaultyFileIOFactory io = new FaultyFileIOFactory(7);
        byte[][] before = new byte[4][];
        try (Pagelog log = new Pagelog(io, dir, PAGE, SEGMENT)) {
            for (int i = 0; i < 4 * RECORDS + 3; i++) { // segments 0-3 filled, three records in segment 4
                log.append(i, 0, 1, image(i), 0);
                log.writeStaged();
            }
            for (int s = 0; s < 4; s++) before[s] = Files.readAllBytes(dir.resolve(PagelogDescriptor.fileName(s)));
        } // closing waits for the forces ahead under way, and forces nothing itself
        io.powerLoss();
        for (int s = 0; s < 4; s++)
            assertArrayEquals(before[s], Files.readAllBytes(dir.resolve(PagelogDescriptor.fileName(s))), "filled segment " + s + " after the power cut, " + io);
    }

    @Test
    void aForceAheadThatFailedFailsTheNextForceThoughTheFsyncWouldNowPass() throws Exception {
        FaultyFileIOFactory io = new FaultyFileIOFactory(8);
        AtomicInteger tries = new AtomicInteger();
        String segment1 = PagelogDescriptor.fileName(1);
        io.failForce(p -> p.getFileName().toString().equals(segment1) && tries.incrementAndGet() == 1); // once: as after a lost write-back
        try (Pagelog log = new Pagelog(io, dir, PAGE, SEGMENT)) {
            for (int i = 0; i < 2 * RECORDS + 1; i++) { // segment 1 fills when segment 2 begins
                log.append(i, 0, 1, image(i), 0);
                log.writeStaged();
            }
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (tries.get() == 0 && System.nanoTime() < deadline) Thread.sleep(1);
            assertTrue(tries.get() > 0, "segment 1 was forced ahead");
            for (Thread t : Thread.getAllStackTraces().keySet()) if (t.getName().startsWith("varve-pagelog-forcer")) t.join(); // its failure noted
            StorageException e = assertThrows(StorageException.class, log::force);
            assertTrue(e.getMessage().contains("ahead of the checkpoint failed") && e.file().getFileName().toString().equals(segment1), e.toString());
            assertThrows(StorageException.class, log::force, "and every force after it");
        }
    }

    private static ByteBuffer image(int n) {
        ByteBuffer b = ByteBuffer.allocateDirect(PAGE);
        b.putInt(0, n);
        return b;
    }
}
