package dev.varve.snapshot;

import dev.varve.core.io.FileIOFactory;
import dev.varve.snapshot.MaplogDescriptor.Kind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A log's write buffer behind a closed gate: it grows rather than write, and gives the growth back once written. */
@Timeout(60)
class MaplogBufferTest {
    /** More than a buffer's worth ({@code BUFFERED_ENTRIES}, 2048): the closed gate makes it double twice. */
    private static final int BURST = 5000;

    @TempDir
    Path dir;

    /** The drop log's gate, stood in for by a switch: closed while the WAL records behind the drops are not durable. */
    private static final class Switch implements MaplogBuffer.WriteGate {
        volatile boolean open;

        @Override
        public boolean open() {
            return open;
        }

        @Override
        public void await() {
            open = true;
        }
    }

    @Test
    void aBufferTheGateMadeGrowGoesBackToItsCapacityOnceWritten() {
        try (MaplogFile log = new MaplogFile(FileIOFactory.standard(), dir.resolve("drops.log"), Kind.DROPS, MaplogDescriptor.NO_LEVEL, 16,
                MaplogFile.Missing.CREATE)) {
            Switch gate = new Switch();
            log.gate(gate);
            int initial = log.bufferCapacity();
            for (int i = 0; i < BURST; i++) log.append(i, 2L * i, 3L * i);
            assertTrue(log.bufferCapacity() >= BURST * MaplogDescriptor.ENTRY_SIZE, "the closed gate kept every entry in memory: "
                    + log.bufferCapacity() + " bytes");
            log.force(); // opens the gate, as the WAL force behind the drops does
            assertEquals(initial, log.bufferCapacity(), "the burst's buffer is given back once written");
            gate.open = false;
            for (int i = BURST; i < BURST + 10; i++) log.append(i, 2L * i, 3L * i);
            assertEquals(initial, log.bufferCapacity(), "appends that fit go on in the buffer as it was");
            long[] a = new long[BURST + 10];
            long[] c = new long[BURST + 10];
            log.read(0, BURST + 10, a, null, c);
            for (int i = 0; i < BURST + 10; i++) {
                assertEquals(i, a[i], "entry " + i);
                assertEquals(3L * i, c[i], "entry " + i);
            }
        }
    }
}
