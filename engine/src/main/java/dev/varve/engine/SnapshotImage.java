package dev.varve.engine;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageChecksum;
import dev.varve.core.tree.BPlusTree;
import dev.varve.core.tree.FreeListImage;
import dev.varve.core.tree.PageLayout;
import dev.varve.snapshot.AsOfPages;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * The page image of a snapshot: every page file of the store as of the snapshot, as the page files of a new store
 * hold them ({@link ImageLoader} writes them there). Snapshot shipping sends this instead of entries, so the
 * receiver writes whole pages in file order and never runs a B+tree insert.
 *
 * <p>{@link #next} hands out the pages one at a time: the catalog's file (file 0) first, then every partition of
 * every table in catalog order; within a file pages 1, 2, ... and the meta page (index 0) last, because the free
 * list is rebuilt on the way ({@link FreeListImage}: pages free at the snapshot and reused since have no pre-state).
 * A page comes out as the snapshot reads it, without passing through page memory (the writers' pages stay
 * cached), with SavedAfter cleared — the new store holds no snapshot, so no page of it has a pre-state anywhere —
 * and its CRC stamped anew. Pages of an erased range are blank, not read.
 *
 * <p>Not thread-safe: one shipping thread reads it. Close it to let the snapshot's archive space go.
 */
public final class SnapshotImage implements AutoCloseable {
    /** Pages read from a file in one call (where they are not in page memory): 256 KiB of 4 KiB pages. */
    private static final int READ_AHEAD_PAGES = 64;

    /** One page file of the image: file {@code fileId} ({@link PageId#fileId}) of {@code pages} pages. */
    public record PageFile(int fileId, int pages) {
    }

    /** One table of the image: its name, placement and partition count, and its entries (every partition's). */
    public record TableImage(String name, TableOptions options, long entries) {
    }

    private final Engine engine;
    private final AsOfPages pages;
    private final int pageSize;
    private final List<TableImage> tables = new ArrayList<>();
    private final List<PageFile> files = new ArrayList<>();
    private final ByteBuffer scratch;
    /** Where {@link #next} is: file {@code fileAt}, page {@code indexAt} next (0 after the data pages: the meta page). */
    private int fileAt;
    private int indexAt = 1;
    private FreeListImage freeList;
    /** Pages {@code aheadFirst ..} ({@code aheadCount} of them) of the current file, read ahead, and whether each had a pre-state. */
    private final ByteBuffer ahead;
    private final boolean[] aheadHeld = new boolean[READ_AHEAD_PAGES];
    private final boolean[] aheadChecked = new boolean[READ_AHEAD_PAGES];
    private int aheadFirst;
    private int aheadCount;
    private int lastFileId = -1;
    private int lastIndex = -1;

    private SnapshotImage(Engine engine, AsOfPages pages) {
        this.engine = engine;
        this.pages = pages;
        this.pageSize = pages.pageSize();
        this.scratch = ByteBuffer.allocateDirect(pageSize);
        this.ahead = ByteBuffer.allocateDirect(READ_AHEAD_PAGES * pageSize);
        files.add(file(Catalog.FILE_ID));
        for (Catalog.Entry e : new Catalog(pages).all()) {
            long entries = 0;
            for (int p = 0; p < e.partitions(); p++) {
                int fileId = PageId.fileId(e.id(), p);
                files.add(file(fileId));
                entries += new BPlusTree(pages, fileId).size();
            }
            tables.add(new TableImage(e.name(), e.options(), entries));
        }
    }

    /**
     * The image of live snapshot {@code snapshot} of {@code store}.
     *
     * @throws SnapshotNotFoundException when the snapshot was never declared or the policy dropped it (says when and why)
     */
    public static SnapshotImage open(Varve store, long snapshot) {
        if (store == null) throw new IllegalArgumentException("store is null");
        Engine engine = store.engine();
        AsOfPages pages = engine.snapshots.openPages(snapshot);
        try {
            return new SnapshotImage(engine, pages);
        } catch (RuntimeException | Error e) {
            pages.close();
            throw e;
        }
    }

    private PageFile file(int fileId) {
        long metaId = PageId.of(fileId, 0);
        return new PageFile(fileId, PageLayout.pageCount(readMeta(metaId, scratch, 0), metaId));
    }

    private Page readMeta(long metaId, ByteBuffer dst, int at) {
        if (!pages.copyPage(metaId, dst, at)) throw pages.noPreState(metaId);
        return new Page(dst, at, pageSize);
    }

    /** The snapshot id. */
    public long snapshot() {
        return pages.snapshot();
    }

    /** Page size of every page of the image. */
    public int pageSize() {
        return pageSize;
    }

    /** The tables as of the snapshot, in catalog order. */
    public List<TableImage> tables() {
        return List.copyOf(tables);
    }

    /** The page files, in the order {@link #next} goes through them. */
    public List<PageFile> files() {
        return List.copyOf(files);
    }

    /** Pages of the whole image. */
    public long pageCount() {
        long n = 0;
        for (PageFile f : files) n += f.pages();
        return n;
    }

    /** True while {@link #next} has a page left to hand out. */
    public boolean hasNext() {
        return fileAt < files.size();
    }

    /** The file id of the page {@link #next} hands out next: a reader can see where a run of pages ends before it reads. */
    public int nextFileId() {
        if (!hasNext()) throw new IllegalStateException("every page of the image was handed out");
        return files.get(fileAt).fileId();
    }

    /** The index in its file of the page {@link #next} hands out next (a file's data pages in order, then its meta page, 0). */
    public int nextIndex() {
        if (!hasNext()) throw new IllegalStateException("every page of the image was handed out");
        return indexAt < files.get(fileAt).pages() ? indexAt : 0;
    }

    /**
     * Writes the next page of the image at {@code dst}'s position, which moves past it; false when every page was
     * handed out. {@link #fileId()} and {@link #index()} then say which page it was.
     *
     * @throws IllegalArgumentException when {@code dst} has less than a page left
     */
    public boolean next(ByteBuffer dst) {
        if (dst == null) throw new IllegalArgumentException("dst must not be null");
        if (dst.remaining() < pageSize) throw new IllegalArgumentException("the buffer has " + dst.remaining() + " bytes left, a page takes " + pageSize);
        if (!hasNext()) return false;
        engine.checkOpen();
        try {
            nextPage(dst);
            return true;
        } catch (RuntimeException e) {
            engine.checkOpen(); // a close under the read (page memory, a Pagelog file): said as such, not as damage
            throw e;
        }
    }

    private void nextPage(ByteBuffer dst) {
        PageFile f = files.get(fileAt);
        int at = dst.position();
        if (freeList == null) freeList = new FreeListImage(readMeta(PageId.of(f.fileId(), 0), scratch, 0), PageId.of(f.fileId(), 0));
        if (indexAt < f.pages()) {
            long id = PageId.of(f.fileId(), indexAt);
            boolean noPreState = false;
            boolean checked = false;
            if (!freeList.erased(indexAt)) {
                if (indexAt < aheadFirst || indexAt >= aheadFirst + aheadCount) readAhead(f);
                dst.put(at, ahead, (indexAt - aheadFirst) * pageSize, pageSize);
                noPreState = !aheadHeld[indexAt - aheadFirst];
                checked = aheadChecked[indexAt - aheadFirst];
            }
            boolean rewritten = freeList.take(new Page(dst, at, pageSize), id, noPreState);
            emit(f.fileId(), indexAt++, dst, at, checked && !rewritten);
        } else {
            freeList.completeMeta(readMeta(PageId.of(f.fileId(), 0), dst, at));
            emit(f.fileId(), 0, dst, at, false);
            fileAt++;
            indexAt = 1;
            freeList = null;
            aheadCount = 0; // the next file reads ahead afresh
        }
    }

    /**
     * Reads the next up to {@value #READ_AHEAD_PAGES} data pages of {@code f} from {@link #indexAt} on in one go (the
     * pages unchanged since the snapshot come from their file in one read where they are not in page memory).
     */
    private void readAhead(PageFile f) {
        int n = 0;
        while (n < READ_AHEAD_PAGES && indexAt + n < f.pages() && !freeList.erased(indexAt + n)) n++;
        pages.copyRun(PageId.of(f.fileId(), indexAt), n, ahead, 0, aheadHeld, aheadChecked);
        aheadFirst = indexAt;
        aheadCount = n;
    }

    /**
     * Clears the page's SavedAfter and stamps its CRC, unless both are as they should be already: SavedAfter clear
     * and the page's own CRC, checked as it was read from its file ({@code crcChecked}); most pages of a snapshot
     * nobody changed since its declaration come that way, and a CRC over each would cost a second pass.
     */
    private void emit(int fileId, int index, ByteBuffer dst, int at, boolean crcChecked) {
        ByteBuffer le = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (!crcChecked || le.getLong(at + PageHeader.SAVED_AFTER_OFFSET) != 0) {
            le.putLong(at + PageHeader.SAVED_AFTER_OFFSET, 0);
            PageChecksum.stamp(dst, at, pageSize);
        }
        dst.position(at + pageSize);
        lastFileId = fileId;
        lastIndex = index;
    }

    /** The file id of the page {@link #next} wrote last. */
    public int fileId() {
        return lastFileId;
    }

    /** The index in its file of the page {@link #next} wrote last. */
    public int index() {
        return lastIndex;
    }

    @Override
    public void close() {
        pages.close();
    }
}
