package dev.varve.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(180)
class RetentionTest {

    @Test
    void kindsAndAccessors() {
        Retention last = Retention.keepLast(100);
        assertEquals(Retention.Kind.LAST, last.kind());
        assertEquals(100, last.count());
        assertThrows(IllegalStateException.class, last::age);
        Retention age = Retention.keepFor(Duration.ofHours(1));
        assertEquals(Retention.Kind.FOR, age.kind());
        assertEquals(Duration.ofHours(1), age.age());
        assertThrows(IllegalStateException.class, age::count);
        assertEquals(Retention.Kind.ALL, Retention.keepAll().kind());
        assertSame(Retention.keepAll(), Retention.keepAll());
    }

    @Test
    void validation() {
        Retention.keepLast(1);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Retention.keepLast(0))
                .getMessage().contains("keepLast"));
        assertThrows(IllegalArgumentException.class, () -> Retention.keepLast(-5));
        Retention.keepFor(Duration.ofNanos(1));
        assertThrows(IllegalArgumentException.class, () -> Retention.keepFor(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> Retention.keepFor(Duration.ofSeconds(-1)));
        assertThrows(IllegalArgumentException.class, () -> Retention.keepFor(null));
        Retention.keepFor(Retention.MAX_AGE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Retention.keepFor(Duration.ofSeconds(Long.MAX_VALUE)));
        assertTrue(e.getMessage().contains("keepFor age must be at most"), e.getMessage()); // its milliseconds would overflow at every declaration
    }

    @Test
    void equalityAndToString() {
        assertEquals(Retention.keepLast(3), Retention.keepLast(3));
        assertEquals(Retention.keepLast(3).hashCode(), Retention.keepLast(3).hashCode());
        assertNotEquals(Retention.keepLast(3), Retention.keepLast(4));
        assertEquals(Retention.keepFor(Duration.ofMinutes(60)), Retention.keepFor(Duration.ofHours(1)));
        assertNotEquals(Retention.keepFor(Duration.ofHours(1)), Retention.keepAll());
        assertEquals("keepLast(100)", Retention.keepLast(100).toString());
        assertEquals("keepFor(PT1H)", Retention.keepFor(Duration.ofHours(1)).toString());
        assertEquals("keepAll()", Retention.keepAll().toString());
    }

    @Test
    void parse() {
        assertEquals(Retention.keepLast(7), Retention.parse("keepLast(7)"));
        assertEquals(Retention.keepLast(7), Retention.parse("  KEEPLAST ( 7 ) "));
        assertEquals(Retention.keepFor(Duration.ofHours(24)), Retention.parse("keepFor(PT24H)"));
        assertEquals(Retention.keepFor(Duration.ofHours(24)), Retention.parse("keepFor(24h)"));
        assertEquals(Retention.keepAll(), Retention.parse("keepAll()"));
        for (Retention r : List.of(Retention.keepLast(1), Retention.keepFor(Duration.ofMillis(1500)),
                Retention.keepAll())) {
            assertEquals(r, Retention.parse(r.toString()));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "keepLast", "keepLast()", "keepLast(0)", "keepLast(x)", "keepLast(1", "keepFor(0s)",
            "keepFor(PT-1S)", "keepFor(soon)", "keepAll(1)", "keepSome(1)", "keepLast(99999999999)"})
    void parseRejectsNamingTheText(String text) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Retention.parse(text));
        assertTrue(e.getMessage().contains("'" + text + "'"), e.getMessage());
    }

    @Test
    void policyLevels() {
        RankTreePolicy p = RankTreePolicy.levels(Retention.keepLast(60), Retention.keepAll());
        assertEquals(2, p.levelCount());
        assertEquals(List.of(Retention.keepLast(60), Retention.keepAll()), p.levels());
        assertThrows(UnsupportedOperationException.class, () -> p.levels().add(Retention.keepAll()));
        assertEquals(OptionalLong.empty(), p.budgetBytes());
        RankTreePolicy b = p.withBudget(1 << 20);
        assertEquals(OptionalLong.of(1 << 20), b.budgetBytes());
        assertEquals(OptionalLong.empty(), p.budgetBytes());
        assertEquals(RankTreePolicy.levels(Retention.keepAll()), RankTreePolicy.keepEverything());
        assertEquals(List.of(Retention.keepAll()), RankTreePolicy.keepEverything().levels());
    }

    @Test
    void policyValidation() {
        assertThrows(IllegalArgumentException.class, () -> RankTreePolicy.levels(new Retention[0]));
        assertThrows(IllegalArgumentException.class, () -> RankTreePolicy.levels((Retention[]) null));
        Retention[] sixteen = new Retention[16];
        java.util.Arrays.fill(sixteen, Retention.keepAll());
        assertEquals(16, RankTreePolicy.levels(sixteen).levelCount());
        Retention[] seventeen = new Retention[17];
        java.util.Arrays.fill(seventeen, Retention.keepAll());
        assertThrows(IllegalArgumentException.class, () -> RankTreePolicy.levels(seventeen));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RankTreePolicy.levels(Retention.keepAll(), null));
        assertTrue(e.getMessage().contains("level 2"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> RankTreePolicy.keepEverything().withBudget(0));
        assertThrows(IllegalArgumentException.class, () -> RankTreePolicy.keepEverything().withBudget(-1));
        RankTreePolicy.keepEverything().withBudget(1);
    }

    @Test
    void policyEqualityToStringAndParse() {
        RankTreePolicy p = RankTreePolicy.levels(Retention.keepLast(60), Retention.keepFor(Duration.ofHours(24)),
                Retention.keepAll());
        assertEquals("keepLast(60),keepFor(PT24H),keepAll()", p.toString());
        assertEquals(p, RankTreePolicy.parse("keepLast(60),keepFor(PT24H),keepAll()"));
        assertEquals(p, RankTreePolicy.parse(" keepLast(60) , keepFor(24h),keepAll() "));
        assertEquals(p, RankTreePolicy.parse(p.toString()));
        assertEquals(p.hashCode(), RankTreePolicy.parse(p.toString()).hashCode());
        assertNotEquals(p, p.withBudget(10));
        assertEquals(p.withBudget(10), p.withBudget(10));
        assertTrue(p.withBudget(10).toString().contains("budget=10"));
        assertNotEquals(p, RankTreePolicy.levels(Retention.keepLast(60)));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "keepLast(1),", ",keepAll()", "keepLast(1) keepAll()", "keepLast(1,2)",
            "keepAll(),keepAll(),keepAll(),keepAll(),keepAll(),keepAll(),keepAll(),keepAll(),"
                    + "keepAll(),keepAll(),keepAll(),keepAll(),keepAll(),keepAll(),keepAll(),keepAll(),keepAll()"})
    void policyParseRejects(String text) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RankTreePolicy.parse(text));
        assertTrue(e.getMessage().contains("'"), e.getMessage());
    }

    @Test
    void anUnbalancedBracketIsNamedAsSuch() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RankTreePolicy.parse("keepLast(1))"));
        assertTrue(e.getMessage().contains("unbalanced ')' at index 11"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> RankTreePolicy.parse("keepLast(1"));
        assertTrue(e.getMessage().contains("unclosed '('"), e.getMessage());
    }
}
