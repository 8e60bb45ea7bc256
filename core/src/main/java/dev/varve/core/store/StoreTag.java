package dev.varve.core.store;

/**
 * The 32-bit fingerprint of a store's 64-bit id that the files with no room for the whole id record: WAL segments and
 * the archive's Pagelog segments, Maplog-format log parts, snapshot log and ranked extents, whose headers had at most
 * 4 bytes free. 0 in such a file means "no store named" (written
 * before the store's id was durable in a checkpoint marker, or by an earlier format), so a fingerprint is never 0.
 */
public final class StoreTag {
    private StoreTag() {
    }

    /** The fingerprint of store id {@code storeId} (not 0): its halves XORed, 1 when that is 0. */
    public static int of(long storeId) {
        int tag = (int) (storeId ^ (storeId >>> 32));
        return tag == 0 ? 1 : tag;
    }

    /**
     * Why a file recording {@code tag} is not the store's whose durable id is {@code storeId}, or null when it may be:
     * the store has no durable id yet (0), the file names no store (0), or the tags agree.
     */
    public static String foreign(String what, int tag, long storeId) {
        if (storeId == 0 || tag == 0 || tag == of(storeId)) return null;
        return what + " belongs to another store (store tag " + String.format("%08x", tag) + "; this store's id "
                + String.format("%016x", storeId) + ", tag " + String.format("%08x", of(storeId)) + "): it was copied in from "
                + "another store";
    }
}
