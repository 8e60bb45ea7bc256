package dev.varve.snapshot;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The Pagelog's recent records: read through once, served from memory after, forgotten when the volume is cut. */
@Timeout(60)
class RecentRecordsTest {
    private static final int RECORD = 64;

    @TempDir
    Path dir;

    @Test
    void aRecordReadOnceIsServedFromMemoryUntilCleared() throws IOException {
        RecentRecords recent = new RecentRecords(RECORD);
        ByteBuffer rec = ByteBuffer.allocateDirect(RECORD);
        try (FileIO f = FileIOFactory.standard().open(dir.resolve("segment"), true)) {
            f.write(filled(1, RECORD * 2), 0);
            assertEquals(RECORD, recent.read(1, f, RECORD, rec));
            assertEquals(1, rec.get(0));
            f.write(filled(2, RECORD * 2), 0); // records never change in a Pagelog: the copy kept is what a read returns
            assertEquals(RECORD, recent.read(1, f, RECORD, rec));
            assertEquals(1, rec.get(RECORD - 1), "served from memory");
            assertEquals(RECORD, recent.read(0, f, 0, rec));
            assertEquals(2, rec.get(0), "another record is read from the file");
            recent.clear(); // recovery cut the volume: the same address may name a new record
            assertEquals(RECORD, recent.read(1, f, RECORD, rec));
            assertEquals(2, rec.get(0));
        }
    }

    @Test
    void aRecordTheFileEndsInIsNotKept() throws IOException {
        RecentRecords recent = new RecentRecords(RECORD);
        ByteBuffer rec = ByteBuffer.allocateDirect(RECORD);
        try (FileIO f = FileIOFactory.standard().open(dir.resolve("segment"), true)) {
            f.write(filled(3, RECORD / 2), 0);
            assertEquals(RECORD / 2, recent.read(0, f, 0, rec), "the short read is told");
            f.write(filled(4, RECORD), 0);
            assertEquals(RECORD, recent.read(0, f, 0, rec));
            assertEquals(4, rec.get(0), "read again from the file, not from a half record kept");
        }
    }

    private static ByteBuffer filled(int value, int bytes) {
        byte[] b = new byte[bytes];
        Arrays.fill(b, (byte) value);
        return ByteBuffer.wrap(b);
    }
}
