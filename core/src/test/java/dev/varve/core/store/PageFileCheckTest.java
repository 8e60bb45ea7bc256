package dev.varve.core.store;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The page files' check tells a page that fails it apart by whether open reads it: one recovery puts back without
 * reading it (a page a power cut tore while a checkpoint wrote it) is reported as restored, any other as damage —
 * a torn page in the middle of the file and one cut short at its end alike.
 */
@Timeout(60)
class PageFileCheckTest {
    private static final int PAGE = 4096;
    private static final int FILE_ID = PageId.fileId(1, 0);

    @TempDir
    Path dir;

    /** Writes pages 0..4 of a page file, then tears page 2 and cuts page 4 short; returns the file. */
    private Path tornFile() throws IOException {
        PageStore store = new PageStore(FileIOFactory.standard(), dir, PAGE);
        ByteBuffer pages = ByteBuffer.allocate(5 * PAGE).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 5; i++) {
            pages.putLong(i * PAGE + PageHeader.PAGE_ID_OFFSET, PageId.of(FILE_ID, i));
            for (int b = 64; b < PAGE; b += 8) pages.putLong(i * PAGE + b, i * 1_000_003L + b);
            PageChecksum.stamp(pages, i * PAGE, PAGE);
        }
        store.write(PageId.of(FILE_ID, 0), pages, 0, 5);
        Path file = store.pathOf(FILE_ID);
        store.close();
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(3L * PAGE + 1024); // page 2 (after the header page): its second sector as a torn write left it
            f.write(new byte[512]);
            f.setLength(5L * PAGE + 1536); // page 4: only three sectors reached the disk
        }
        return file;
    }

    private static List<String> check(Path dir, Set<Long> restoredByOpen, List<String> restored) {
        List<String> damage = new ArrayList<>();
        PageStore store = new PageStore(FileIOFactory.standard(), dir, PAGE);
        try {
            PageFileCheck.check(store, FileIOFactory.standard(), restoredByOpen::contains, (file, offset, what) -> damage.add(offset + ""),
                    (file, offset, what) -> restored.add(offset + ""));
        } finally {
            store.close();
        }
        return damage;
    }

    @Test
    void aTornPageIsDamageUnlessOpenPutsItBack() throws IOException {
        tornFile();
        List<String> restored = new ArrayList<>();
        assertEquals(List.of(String.valueOf(5L * PAGE), String.valueOf(3L * PAGE)), sorted(check(dir, Set.of(), restored)));
        assertEquals(List.of(), restored);

        List<String> damage = check(dir, Set.of(PageId.of(FILE_ID, 2), PageId.of(FILE_ID, 4)), restored);
        assertEquals(List.of(), damage);
        assertEquals(List.of(String.valueOf(5L * PAGE), String.valueOf(3L * PAGE)), sorted(restored));

        restored.clear(); // only the one open puts back moves
        assertEquals(List.of(String.valueOf(3L * PAGE)), check(dir, Set.of(PageId.of(FILE_ID, 4)), restored));
        assertEquals(List.of(String.valueOf(5L * PAGE)), restored);
    }

    private static List<String> sorted(List<String> l) {
        List<String> s = new ArrayList<>(l);
        s.sort((a, b) -> Long.compare(Long.parseLong(b), Long.parseLong(a)));
        return s;
    }
}
