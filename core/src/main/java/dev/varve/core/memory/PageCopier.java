package dev.varve.core.memory;

import dev.varve.core.io.CorruptionException;

import java.nio.ByteBuffer;

/**
 * Copies of the current images of pages for a reader of every page of a store (snapshot shipping), taken without
 * bringing them into page memory, which would evict the pages the store's writers work on: a resident page is copied
 * from its frame under the read latch, any other is read from its file, consecutive ones in one call.
 */
public final class PageCopier {
    private final PageMemory memory;

    PageCopier(PageMemory memory) {
        this.memory = memory;
    }

    /**
     * Copies the current image of {@code pageId} into {@code dst} at {@code offset} without bringing it into memory:
     * from its frame under the read latch when it is resident, else from its file. A page that is not
     * resident when looked up is clean, so its file holds its latest image; should it be loaded, changed and written
     * again by a checkpoint while its file is read, the torn read fails its checksum and the page is read through
     * memory like any other (which reports real damage as usual).
     */
    public void copyOut(long pageId, ByteBuffer dst, int offset) {
        if (memory.closed) throw new IllegalStateException("page memory is closed");
        Frame f = memory.table.getAndPin(pageId);
        if (f == null) {
            try {
                memory.store.read(pageId, dst, offset);
                return;
            } catch (CorruptionException tornOrDamaged) {
                f = memory.acquire(pageId, false); // a torn read succeeds here; damage is reported here
            }
        } else if (!PageMemory.awaitReady(f)) {
            f.unpin();
            f = memory.acquire(pageId, false); // its load failed: this reports why, or loads it
        }
        f.latchRead();
        try {
            dst.put(offset, f.buffer(), f.base(), memory.pageSize);
        } finally {
            f.unlatchRead();
            f.unpin();
        }
    }

    /**
     * {@link #copyOut} of pages {@code first, first + 1, ...} ({@code count} of one file) into {@code dst} from
     * {@code offset} on: the pages not resident when looked up are read from their file in one call per stretch and
     * checked one by one (a page failing its check is read again alone, as {@code copyOut} reads it), the others are
     * copied from their frames. Looking up before reading is what makes a page read from its file current, as in
     * {@code copyOut}. {@code checked[i]} says whether page {@code i} came from its file with its CRC checked (so the
     * CRC it carries is its own; a frame's copy carries whatever its header held when it was last read or written).
     */
    public void copyOutRun(long first, int count, ByteBuffer dst, int offset, boolean[] checked) {
        if (memory.closed) throw new IllegalStateException("page memory is closed");
        boolean[] resident = new boolean[count];
        for (int i = 0; i < count; i++) resident[i] = memory.table.contains(first + i);
        for (int i = 0; i < count; ) {
            if (resident[i]) {
                copyOut(first + i, dst, offset + i * memory.pageSize);
                checked[i] = false;
                i++;
                continue;
            }
            int end = i;
            while (end < count && !resident[end]) end++;
            int read = memory.store.readUnchecked(first + i, end - i, dst, offset + i * memory.pageSize);
            for (int k = i; k < end; k++) {
                int at = offset + k * memory.pageSize;
                checked[k] = k < i + read && memory.store.intact(first + k, dst, at);
                if (!checked[k]) copyOut(first + k, dst, at);
            }
            i = end;
        }
    }
}
