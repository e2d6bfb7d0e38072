-- D31: accounts name their organization; the name finds it again (D17 counts
-- every account of one organization as one party).
ALTER TABLE organizations ADD CONSTRAINT organizations_name_unique UNIQUE (name);
