// The shared result table (tests/vectors/results.txt), asserted through the public .NET API.
// The Rust (core/tests/result_table.rs), C, C++ and Python suites read the same file; a
// scenario this suite does not implement fails here until it is.
using System;
using System.Collections.Generic;
using System.IO;
using NUnit.Framework;
using SpotTimer;

namespace SpotTimer.Tests
{
    [TestFixture]
    public class ResultTableTests
    {
        static readonly TimeSpan Wait = TimeSpan.FromSeconds(5);
        const string TableName = "tests/vectors/results.txt";
        const string Unreadable = "(unreadable table)";

        // ------------------------------------------------------------------ the table

        /// <summary>SPOT_RESULT_TABLE (set by mk/dotnet.mk), else SPOT_REPO_ROOT/tests/vectors/results.txt,
        /// else the first tests/vectors/results.txt walking up from the test assembly's directory.</summary>
        static string TablePath()
        {
            string env = Environment.GetEnvironmentVariable("SPOT_RESULT_TABLE");
            if (!string.IsNullOrEmpty(env)) return env;
            string root = Environment.GetEnvironmentVariable("SPOT_REPO_ROOT");
            if (!string.IsNullOrEmpty(root)) return Path.Combine(root, "tests", "vectors", "results.txt");
            var dir = new DirectoryInfo(Path.GetDirectoryName(typeof(ResultTableTests).Assembly.Location));
            for (; dir != null; dir = dir.Parent)
            {
                string p = Path.Combine(dir.FullName, "tests", "vectors", "results.txt");
                if (File.Exists(p)) return p;
            }
            return null;
        }

        /// <summary>The table's rows (scenario, expected): '#' starts a comment, blank lines are
        /// skipped, the first two fields of every other line are the scenario and its expected
        /// result. A row without an expected result has a null one.</summary>
        static List<KeyValuePair<string, string>> ReadTable()
        {
            string path = TablePath();
            if (path == null)
                throw new FileNotFoundException("cannot find " + TableName + " (set SPOT_RESULT_TABLE or SPOT_REPO_ROOT)");
            var rows = new List<KeyValuePair<string, string>>();
            foreach (string raw in File.ReadAllLines(path))
            {
                int hash = raw.IndexOf('#');
                string line = (hash >= 0 ? raw.Substring(0, hash) : raw).Trim();
                if (line.Length == 0) continue;
                string[] f = line.Split(new[] { ' ', '\t' }, StringSplitOptions.RemoveEmptyEntries);
                rows.Add(new KeyValuePair<string, string>(f[0], f.Length > 1 ? f[1] : null));
            }
            return rows;
        }

        /// <summary>One test case per row. Never throws (NUnit 2.6 would turn that into a test
        /// that is not run): a table that cannot be read becomes one failing case.</summary>
        public static IEnumerable<TestCaseData> Rows()
        {
            var cases = new List<TestCaseData>();
            List<KeyValuePair<string, string>> rows;
            try { rows = ReadTable(); }
            catch (Exception e)
            {
                cases.Add(new TestCaseData(Unreadable, e.Message).SetName("ResultTable_unreadable"));
                return cases;
            }
            foreach (var row in rows)
                cases.Add(new TestCaseData(row.Key, row.Value).SetName("ResultTable_" + row.Key));
            return cases;
        }

        [Test]
        public void Table_HasAtLeast17Rows_EachWithAnExpectedResult()
        {
            var rows = ReadTable();
            Assert.GreaterOrEqual(rows.Count, 17, "rows in " + TablePath());
            var seen = new HashSet<string>();
            foreach (var row in rows)
            {
                Assert.IsNotNull(row.Value, "row " + row.Key + " has no expected result");
                Assert.IsTrue(seen.Add(row.Key), "scenario " + row.Key + " is listed twice");
            }
        }

        [Test, Timeout(30000), TestCaseSource("Rows")]
        public void Scenario_GivesItsExpectedResult(string scenario, string expected)
        {
            if (scenario == Unreadable) Assert.Fail("cannot read " + TableName + ": " + expected);
            Assert.IsNotNull(expected, scenario + ": the row has no expected result");
            string got;
            try { got = Run(scenario); }
            catch (Exception e) { got = "unexpected " + e.GetType().Name + ": " + e.Message; }
            Assert.AreEqual(expected, got, string.Format("{0}: expected {1}, got {2}", scenario, expected, got));
        }

        // ------------------------------------------------------------------ result names

        static string NameOf(EndReason r)
        {
            switch (r)
            {
                case EndReason.Cancelled: return "CANCELLED";
                case EndReason.Superseded: return "SUPERSEDED";
                case EndReason.Completed: return "COMPLETED";
                case EndReason.LeaseExpired: return "LEASE_EXPIRED";
                case EndReason.Revoked: return "REVOKED";
                case EndReason.RuntimeClosed: return "RUNTIME_CLOSED";
                default: return "EndReason(" + (uint)r + ")";
            }
        }

        /// <summary>The contract's name of an error (docs/contract.md, "Results"); anything else
        /// by its type and message, so that a mismatch says what happened.</summary>
        static string NameOf(Exception e)
        {
            if (e is CleanupFailedException) return "E_CLEANUP_FAILED";
            if (e is SpotInvalidArgumentException) return "E_INVALID_ARGUMENT";
            if (e is UnknownOwnerException) return "E_UNKNOWN_OWNER";
            if (e is LeaseExpiredException) return "E_LEASE_EXPIRED";
            if (e is OwnerRevokedException) return "E_REVOKED";
            if (e is StaleTimerException) return "E_STALE_TIMER";
            if (e is SpotTimeoutException) return "E_TIMEOUT";
            if (e is WouldDeadlockException) return "E_WOULD_DEADLOCK";
            if (e is RuntimeClosedException) return "E_CLOSED";
            return e.GetType().Name + ": " + e.Message;
        }

        /// <summary>A terminal result: the end reason, CLEANUP_FAILED for the release hook's
        /// failure (which must carry the hook's message, "boom"), or the error's name.</summary>
        static string Terminal(Func<CancelResult> cancel)
        {
            try { return NameOf(cancel().Reason); }
            catch (CleanupFailedException e)
            {
                if (e.CleanupMessage.Contains("boom") && e.Message.Contains("boom")) return "CLEANUP_FAILED";
                return "CLEANUP_FAILED without the hook's message \"boom\" (" + e.Message + ")";
            }
            catch (Exception e) { return NameOf(e); }
        }

        /// <summary>An operation that returns nothing (or a registration): OK or the error's name.</summary>
        static string Op(Action op)
        {
            try { op(); return "OK"; }
            catch (Exception e) { return NameOf(e); }
        }

        // ------------------------------------------------------------------ the scenarios

        static readonly TimeSpan Period = TimeSpan.FromMilliseconds(10);
        static void Nothing(Tick t) { }
        static TimerOptions FailingHook()
        {
            return new TimerOptions { OnRelease = () => { throw new Exception("boom"); } };
        }

        /// <summary>Runs one scenario on a fresh manual-clock runtime; the result's name. Owner 1
        /// (serial gate, no lease unless said so); "the timer" is owner 1's key 1, every 10 ms,
        /// a handler that does nothing unless said so. Mirrors core/tests/result_table.rs.</summary>
        static string Run(string scenario)
        {
            using (var rt = Runtime.CreateManual())
            {
                Func<Owner> owner = () => rt.AcquireOwner(1);
                Func<double, Owner> leased = ms => rt.AcquireOwner(1, TimeSpan.FromMilliseconds(ms));
                switch (scenario)
                {
                    case "cancel_live":
                    {
                        var t = owner().Every(1, Period, Nothing);
                        return Terminal(() => t.Cancel(Wait));
                    }
                    case "cancel_twice":
                    {
                        var t = owner().Every(1, Period, Nothing);
                        Terminal(() => t.Cancel(Wait));
                        return Terminal(() => t.Cancel(Wait));
                    }
                    case "cancel_superseded":
                    {
                        var o = owner();
                        var first = o.Every(1, Period, Nothing);
                        o.Every(1, Period, Nothing);
                        return Terminal(() => first.Cancel(Wait));
                    }
                    case "cancel_completed_one_shot":
                    {
                        int runs = 0;
                        var t = owner().After(1, TimeSpan.FromMilliseconds(5), x => runs++);
                        rt.Advance(TimeSpan.FromMilliseconds(10)); // delivers what came due
                        if (runs != 1) return "the one-shot ran " + runs + " times";
                        return Terminal(() => t.Cancel(Wait));
                    }
                    case "cancel_revoked":
                    {
                        var o = owner();
                        var t = o.Every(1, Period, Nothing);
                        o.Revoke();
                        return Terminal(() => t.Cancel(Wait));
                    }
                    case "cancel_lease_expired":
                    {
                        var o = leased(10);
                        var t = o.Every(1, TimeSpan.FromMilliseconds(100), Nothing);
                        rt.Advance(TimeSpan.FromMilliseconds(20));
                        return Terminal(() => t.Cancel(Wait));
                    }
                    case "cancel_after_close":
                    {
                        var t = owner().Every(1, Period, Nothing);
                        rt.Dispose();
                        return Terminal(() => t.Cancel(Wait));
                    }
                    case "cancel_cleanup_failed":
                    case "cancel_cleanup_failed_twice":
                    {
                        var t = owner().Every(1, Period, Nothing, FailingHook());
                        string first = Terminal(() => t.Cancel(Wait));
                        return scenario == "cancel_cleanup_failed" ? first : Terminal(() => t.Cancel(Wait));
                    }
                    case "cancel_in_own_callback":
                    case "cancel_in_own_callback_result":
                    {
                        // The handler cancels its own timer, blocking, and records what it got.
                        string inside = null;
                        Timer t = null;
                        t = owner().Every(1, Period, x => { inside = Terminal(() => t.Cancel(Wait)); });
                        rt.Advance(Period);
                        if (inside == null) return "the handler did not run";
                        return scenario == "cancel_in_own_callback" ? inside : Terminal(() => t.Cancel(Wait));
                    }
                    case "register_revoked_owner":
                    {
                        var o = owner();
                        o.Revoke();
                        return Op(() => o.Every(1, Period, Nothing));
                    }
                    case "register_lease_expired":
                    {
                        var o = leased(10);
                        rt.Advance(TimeSpan.FromMilliseconds(20));
                        return Op(() => o.Every(1, Period, Nothing));
                    }
                    case "register_after_close":
                    {
                        var o = owner();
                        rt.Dispose();
                        return Op(() => o.Every(1, Period, Nothing));
                    }
                    case "register_zero_period":
                        return Op(() => owner().Every(1, TimeSpan.Zero, Nothing));
                    case "renew_after_expiry":
                    {
                        var o = leased(10);
                        rt.Advance(TimeSpan.FromMilliseconds(20));
                        return Op(() => o.Renew(TimeSpan.FromMilliseconds(10)));
                    }
                    case "renew_revoked":
                    {
                        var o = owner();
                        o.Revoke();
                        return Op(() => o.Renew(TimeSpan.FromMilliseconds(10)));
                    }
                    default:
                        return "scenario \"" + scenario + "\" is not implemented by the .NET suite";
                }
            }
        }
    }
}
