import { describe, expect, it } from "vitest";
import { snakeCase } from "./snake-case.js";

describe("snakeCase", () => {
  it.each([
    ["High Value Users", "high_value_users"],
    ["highValueUsers", "high_value_users"],
    ["High-Value users!", "high_value_users"],
    ["HighValueUsers", "high_value_users"],
    ["high_value_users", "high_value_users"],
    ["  high   value  users  ", "high_value_users"],
    ["HTTPServerErrors", "http_server_errors"],
    ["VIP", "vip"],
    ["VIPCustomers", "vip_customers"],
    ["myURL", "my_url"],
    ["Top10Users", "top10_users"],
    ["Users 2024", "users_2024"],
    ["2024Q1Buyers", "2024_q1_buyers"],
    ["Churn-risk (30d)", "churn_risk_30d"],
    ["e-mail.opens/week", "e_mail_opens_week"],
    ["Café Lovers", "cafe_lovers"],
    ["Über Fans", "uber_fans"],
    ["日本 Users", "日本_users"],
    ["Ñandú", "nandu"],
    ["already_snake_case", "already_snake_case"],
    ["__leading and trailing__", "leading_and_trailing"],
  ])("%j → %j", (name, expected) => {
    expect(snakeCase(name)).toBe(expected);
  });

  it.each(["", "   ", "!!!", "---", "🎉🎉", "\t\n"])("refuses %j: nothing is left", (name) => {
    expect(snakeCase(name)).toBeUndefined();
  });

  it("is idempotent", () => {
    for (const name of ["High Value Users", "HTTPServerErrors", "Top10Users", "Café Lovers"]) {
      const once = snakeCase(name);
      expect(snakeCase(once ?? "")).toBe(once);
    }
  });
});
